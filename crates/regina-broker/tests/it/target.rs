//! The connection the hostile corpus of `regina-bench` sends its probes over
//! (`crate::target::HttpConn` there): the contract test includes that corpus as it is, so its
//! probes reach the test broker through here, and each exchange is recorded for the test to
//! judge.

use std::sync::Mutex;

/// One request and its answer.
pub struct Exchange {
    pub method: String,
    pub path: String,
    pub body: Option<Vec<u8>>,
    pub status: u16,
    pub answer: Vec<u8>,
}

static EXCHANGES: Mutex<Vec<Exchange>> = Mutex::new(Vec::new());

/// The exchanges recorded since the last call.
pub fn take() -> Vec<Exchange> {
    std::mem::take(&mut *EXCHANGES.lock().unwrap())
}

/// A client of one broker.
pub struct HttpConn {
    base: String,
    http: reqwest::Client,
}

impl HttpConn {
    pub fn new(base: &str) -> HttpConn {
        HttpConn {
            base: base.trim_end_matches('/').to_owned(),
            http: regina_testkit::http(),
        }
    }

    /// Sends one request as given and records it with its answer.
    pub async fn send(
        &mut self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<(u16, Vec<u8>), reqwest::Error> {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = self
            .http
            .request(method.clone(), format!("{}{path}", self.base));
        if let Some(body) = &body {
            request = request
                .header("content-type", "application/json")
                .body(body.clone());
        }
        let response = request.send().await?;
        let status = response.status().as_u16();
        let answer = response.bytes().await?.to_vec();
        EXCHANGES.lock().unwrap().push(Exchange {
            method: method.to_string(),
            path: path.to_owned(),
            body,
            status,
            answer: answer.clone(),
        });
        Ok((status, answer))
    }
}
