//! JSON Schema fragments of the catalogue: small constructors, and the shared component schemas
//! that routes refer to by name (`#/components/schemas/<Name>`).

use serde_json::{json, Map, Value};

/// The stable error codes of http-api.md §2.3.
pub(crate) const ERROR_CODES: &[&str] = &[
    "invalid_json",
    "validation_failed",
    "invalid_parameter",
    "too_many_items",
    "unauthorized",
    "token_expired",
    "forbidden",
    "route_not_found",
    "queue_not_found",
    "partition_not_found",
    "message_not_found",
    "not_in_dlq",
    "method_not_allowed",
    "lease_expired",
    "lease_not_found",
    "not_leased",
    "already_settled",
    "group_mismatch",
    "message_leased",
    "query_not_found",
    "config_hash_mismatch",
    "encryption_unavailable",
    "body_too_large",
    "queue_full",
    "database_unavailable",
    "database_timeout",
    "buffer_unavailable",
    "overloaded",
    "shutting_down",
    "not_implemented",
    "decryption_failed",
    "internal",
];

pub(crate) fn string() -> Value {
    json!({"type": "string"})
}

pub(crate) fn integer() -> Value {
    json!({"type": "integer"})
}

pub(crate) fn number() -> Value {
    json!({"type": "number"})
}

pub(crate) fn boolean() -> Value {
    json!({"type": "boolean"})
}

/// An ISO-8601 UTC timestamp.
pub(crate) fn time() -> Value {
    json!({"type": "string", "format": "date-time"})
}

pub(crate) fn uuid() -> Value {
    json!({"type": "string", "format": "uuid"})
}

/// Any JSON value.
pub(crate) fn any() -> Value {
    json!({})
}

/// A queue, partition or consumer group name (http-api.md §6; the length limit is
/// `NAME_CHARS_MAX`).
pub(crate) fn name() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 255})
}

/// `schema` or `null`.
pub(crate) fn nullable(schema: Value) -> Value {
    match schema.get("type").and_then(Value::as_str) {
        Some(kind) if schema.as_object().is_some_and(|o| !o.contains_key("$ref")) => {
            let mut out = schema.clone();
            out["type"] = json!([kind, "null"]);
            out
        }
        _ => json!({"anyOf": [schema, {"type": "null"}]}),
    }
}

/// A reference to a component schema.
pub(crate) fn named(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

pub(crate) fn array(items: Value) -> Value {
    json!({"type": "array", "items": items})
}

/// An object with these properties (more may be present: clients ignore unknown members).
pub(crate) fn object(properties: &[(&str, Value)]) -> Value {
    let properties: Map<String, Value> = properties
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    json!({"type": "object", "properties": properties})
}

/// [`object`] whose listed `required` members must be present.
pub(crate) fn object_req(properties: &[(&str, Value)], required: &[&str]) -> Value {
    let mut out = object(properties);
    out["required"] = json!(required);
    out
}

/// An object whose values all follow `values` (a map keyed by name).
pub(crate) fn map_of(values: Value) -> Value {
    json!({"type": "object", "additionalProperties": values})
}

/// `{limit, offset, total}`.
pub(crate) fn pagination() -> Value {
    named("Pagination")
}

/// The six counts of a partition or queue (http-api.md §4.16).
pub(crate) fn counts() -> Value {
    named("MessageCounts")
}

/// The shared component schemas, by name.
pub(crate) fn components() -> Map<String, Value> {
    let mut out = Map::new();
    let mut add = |name: &str, schema: Value| {
        out.insert(name.to_owned(), schema);
    };
    add(
        "Error",
        object_req(
            &[
                ("error", string()),
                ("code", json!({"type": "string", "enum": ERROR_CODES})),
                ("field", string()),
                ("index", integer()),
                ("limit", integer()),
                ("success", json!({"const": false})),
            ],
            &["error", "code"],
        ),
    );
    add(
        "Pagination",
        object(&[
            ("limit", integer()),
            ("offset", integer()),
            ("total", integer()),
        ]),
    );
    add(
        "MessageCounts",
        object(&[
            ("total", integer()),
            ("pending", integer()),
            ("processing", integer()),
            ("completed", integer()),
            ("failed", integer()),
            ("deadLetter", integer()),
        ]),
    );
    add("QueueSettings", queue_settings());
    add("PushResult", push_result());
    add("Message", message());
    add("AckResult", ack_result());
    add("TimeSeries", time_series());
    out
}

/// Every option of a queue as the answers report it (`regina._queue_options`): all present, none
/// null. The request type `QueueOptions` is the configure body, whose members are all optional.
fn queue_settings() -> Value {
    const INTEGERS: [&str; 11] = [
        "leaseTime",
        "retryLimit",
        "retryDelay",
        "maxSize",
        "ttl",
        "priority",
        "delayedProcessing",
        "windowBuffer",
        "retentionSeconds",
        "completedRetentionSeconds",
        "maxWaitTimeSeconds",
    ];
    const FLAGS: [&str; 4] = [
        "deadLetterQueue",
        "dlqAfterMaxRetries",
        "retentionEnabled",
        "encryptionEnabled",
    ];
    let properties: Vec<(&str, Value)> = INTEGERS
        .iter()
        .map(|name| (*name, integer()))
        .chain(FLAGS.iter().map(|name| (*name, boolean())))
        .collect();
    let required: Vec<&str> = properties.iter().map(|(name, _)| *name).collect();
    object_req(&properties, &required)
}

fn push_result() -> Value {
    object(&[
        ("index", integer()),
        ("transaction_id", string()),
        (
            "status",
            json!({"type": "string", "enum": ["queued", "duplicate", "buffered", "failed"]}),
        ),
        ("message_id", uuid()),
        ("partition_id", uuid()),
        ("trace_id", nullable(string())),
        ("queueName", string()),
        ("queue", string()),
        ("partition", string()),
        ("error", string()),
        ("code", string()),
    ])
}

fn message() -> Value {
    object(&[
        ("id", uuid()),
        ("transactionId", string()),
        ("traceId", nullable(string())),
        ("data", any()),
        ("producerSub", nullable(string())),
        ("createdAt", time()),
        ("partitionId", uuid()),
        ("partition", string()),
        ("queue", string()),
        ("leaseId", string()),
        ("consumerGroup", string()),
        ("retryCount", integer()),
    ])
}

fn ack_result() -> Value {
    object(&[
        ("index", integer()),
        ("transactionId", string()),
        ("success", boolean()),
        ("error", nullable(string())),
        ("code", nullable(string())),
        ("queueName", nullable(string())),
        ("partitionName", nullable(string())),
        ("leaseReleased", boolean()),
        ("dlq", boolean()),
    ])
}

fn time_series() -> Value {
    object(&[
        ("from", time()),
        ("to", time()),
        ("bucketSeconds", integer()),
        (
            "series",
            array(object(&[
                ("name", string()),
                ("labels", map_of(string())),
                (
                    "points",
                    array(json!({"type": "array", "prefixItems": [time(), number()],
                                 "minItems": 2, "maxItems": 2})),
                ),
            ])),
        ),
    ])
}
