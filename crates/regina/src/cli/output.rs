//! Printing: plain tables for people, the broker's JSON verbatim for programs, errors on stderr.

use std::io::Write as _;

use comfy_table::{presets, CellAlignment, Table};
use serde_json::Value;

use super::error::CliError;

/// Longest payload preview in a table cell, characters (`tail` and `--json` print it whole).
const PREVIEW_CHARS_MAX: usize = 60;
/// Spaces between table columns.
const COLUMN_GAP: u16 = 2;

/// A borderless table with the given (upper-case) header, columns two spaces apart.
pub fn table(header: &[&str]) -> Table {
    let mut table = Table::new();
    table
        .load_preset(presets::NOTHING)
        .set_header(header.to_vec());
    for column in table.column_iter_mut() {
        column.set_padding((0, COLUMN_GAP));
    }
    table
}

/// Right-aligns the columns at `indexes` (counts).
pub fn align_right(table: &mut Table, indexes: &[usize]) {
    for &index in indexes {
        if let Some(column) = table.column_mut(index) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
}

/// A two-column `key  value` block without a header, for one object's fields.
pub fn fields(rows: &[(&str, String)]) -> Table {
    let mut table = Table::new();
    table.load_preset(presets::NOTHING);
    for (key, value) in rows {
        table.add_row(vec![(*key).to_owned(), value.clone()]);
    }
    for column in table.column_iter_mut() {
        column.set_padding((0, COLUMN_GAP));
    }
    table
}

/// Prints a table without trailing spaces.
///
/// # Errors
/// When stdout cannot be written.
pub fn print_table(table: &Table) -> Result<(), CliError> {
    let mut text = table.trim_fmt();
    text.push('\n');
    print(&text)
}

/// Prints one line.
///
/// # Errors
/// When stdout cannot be written.
pub fn line(text: &str) -> Result<(), CliError> {
    print(&format!("{text}\n"))
}

/// Prints text as is, then flushes (output may feed a pipe that waits for it).
///
/// # Errors
/// When stdout cannot be written.
pub fn print(text: &str) -> Result<(), CliError> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

/// Prints a broker answer's JSON body verbatim on one line.
///
/// # Errors
/// When stdout cannot be written.
pub fn raw_json(text: &str) -> Result<(), CliError> {
    line(text.trim_end())
}

/// Prints `error` on stderr: `regina: text (status code)` for people, one JSON line with
/// `--json`.
pub fn error(error: &CliError, json: bool) {
    let text = if json {
        error.to_json_line()
    } else {
        format!("regina: {}", error.to_human_line())
    };
    // Nothing better can be done when stderr is gone.
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

/// Prints a note for people on stderr (progress, warnings), never mixed into stdout.
pub fn note(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "regina: {text}");
}

/// A JSON scalar as a table cell: strings without quotes, `null` (or absent) as `-`.
pub fn cell(value: &Value) -> String {
    match value {
        Value::Null => "-".to_owned(),
        Value::String(s) if s.is_empty() => "-".to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A payload as compact JSON, cut to a preview length.
pub fn preview(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= PREVIEW_CHARS_MAX {
        return text;
    }
    let mut cut: String = text.chars().take(PREVIEW_CHARS_MAX - 1).collect();
    cut.push('…');
    cut
}

/// `n thing` or `n things`.
pub fn count(n: usize, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

/// The JSON array at `value[key]`, empty when absent.
pub fn array<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value[key].as_array().map_or(&[], Vec::as_slice)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn cells_show_strings_bare_and_absent_values_as_a_dash() {
        assert_eq!(cell(&json!("orders")), "orders");
        assert_eq!(cell(&json!(null)), "-");
        assert_eq!(cell(&json!("")), "-");
        assert_eq!(cell(&json!(12)), "12");
        assert_eq!(cell(&json!(true)), "true");
    }

    #[test]
    fn long_payloads_are_cut_to_a_preview() {
        let long = json!({"text": "x".repeat(200)});
        let shown = preview(&long);
        assert_eq!(shown.chars().count(), PREVIEW_CHARS_MAX);
        assert!(shown.ends_with('…'));
        assert_eq!(preview(&json!({"n": 1})), r#"{"n":1}"#);
    }

    #[test]
    fn tables_have_no_borders_and_no_trailing_spaces() {
        let mut t = table(&["NAME", "TOTAL"]);
        t.add_row(vec!["orders", "12"]);
        t.add_row(vec!["a", "3"]);
        align_right(&mut t, &[1]);
        assert_eq!(t.trim_fmt(), "NAME    TOTAL\norders     12\na           3");
    }
}
