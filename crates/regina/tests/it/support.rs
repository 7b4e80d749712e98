//! Running the `regina` binary, and a stand-in server for what a broker would answer. Calls of the
//! broker's API for setup and checks go through the test kit's client (`broker.api()`).

use std::process::Stdio;

use regina_testkit::{TestBroker, DEADLINE};
use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;
use tokio::process::{Child, Command};

/// One finished run of `regina`.
#[derive(Debug)]
pub struct Run {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Asserts exit status 0 and returns stdout.
    #[track_caller]
    pub fn ok(&self) -> &str {
        assert_eq!(self.status, 0, "regina failed: {self:#?}");
        &self.stdout
    }

    /// Asserts exit status 0 and parses stdout as one JSON document.
    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_str(self.ok().trim())
            .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {self:#?}"))
    }

    /// Asserts exit status 1 with `--json` error output: stdout as given, stderr one JSON line
    /// `{error, code}` with this code.
    #[track_caller]
    pub fn assert_json_error(&self, code: &str) -> Value {
        assert_eq!(self.status, 1, "expected exit status 1: {self:#?}");
        let lines: Vec<&str> = self.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "expected one error line: {self:#?}");
        let error: Value = serde_json::from_str(lines[0])
            .unwrap_or_else(|e| panic!("stderr is not JSON ({e}): {self:#?}"));
        assert_eq!(error["code"], code, "wrong code: {self:#?}");
        assert!(
            error["error"].as_str().is_some_and(|t| !t.is_empty()),
            "error text missing: {self:#?}"
        );
        error
    }

    /// Asserts exit status 1 with a human error line naming `code` on stderr, nothing on stdout.
    #[track_caller]
    pub fn assert_error(&self, code: &str) {
        assert_eq!(self.status, 1, "expected exit status 1: {self:#?}");
        assert!(
            self.stderr.starts_with("regina: ") && self.stderr.contains(code),
            "stderr does not name {code}: {self:#?}"
        );
        assert!(self.stdout.is_empty(), "stdout not empty: {self:#?}");
    }
}

/// A `regina` command for the broker at `url` (`--server` from `REGINA_URL`), with no token set.
pub fn command(url: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_regina"));
    command
        .env("REGINA_URL", url)
        .env_remove("REGINA_TOKEN")
        .kill_on_drop(true);
    command
}

/// Runs `regina ARGS` against `broker` with empty stdin.
pub async fn regina(broker: &TestBroker, args: &[&str]) -> Run {
    regina_with_input(broker, args, "").await
}

/// Runs `regina ARGS` against `broker` with `input` on stdin.
pub async fn regina_with_input(broker: &TestBroker, args: &[&str], input: &str) -> Run {
    finish(command(&broker.base_url), args, input).await
}

/// Runs `regina ARGS` against whatever listens at `url` (or nothing).
pub async fn regina_at(url: &str, args: &[&str]) -> Run {
    finish(command(url), args, "").await
}

/// Runs a prepared command with `args` and `input` on stdin to its end.
pub async fn finish(mut command: Command, args: &[&str], input: &str) -> Run {
    let mut child = command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start regina");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    let output = tokio::time::timeout(DEADLINE, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("regina {args:?} did not finish"))
        .unwrap();
    Run {
        status: output.status.code().expect("regina ended by a signal"),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

/// Starts `regina ARGS` in the background, stdout and stderr piped.
pub fn spawn(broker: &TestBroker, args: &[&str]) -> Child {
    command(&broker.base_url)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start regina")
}

/// Sends SIGINT to a running child, as Ctrl-C would.
pub async fn interrupt(child: &Child) {
    let pid = child.id().expect("child still running").to_string();
    let status = Command::new("kill")
        .args(["-s", "INT", &pid])
        .status()
        .await
        .unwrap();
    assert!(status.success(), "kill -s INT {pid} failed");
}

/// Serves one HTTP request on `listener` with `status` and a JSON `body`, like a broker would;
/// returns the request's head and body as received.
pub async fn answer_once(listener: TcpListener, status: &str, body: &str) -> (String, String) {
    let (mut socket, _) = listener.accept().await.unwrap();
    let mut received = Vec::new();
    let mut buffer = [0_u8; 4096];
    let head_end = loop {
        if let Some(at) = received.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = socket.read(&mut buffer).await.unwrap();
        assert!(n > 0, "the client closed before sending its request");
        received.extend_from_slice(&buffer[..n]);
    };
    let head = String::from_utf8(received[..head_end].to_vec()).unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().unwrap())
        })
        .unwrap_or(0);
    while received.len() < head_end + length {
        let n = socket.read(&mut buffer).await.unwrap();
        assert!(n > 0, "the client closed before sending its body");
        received.extend_from_slice(&buffer[..n]);
    }
    let request_body = String::from_utf8(received[head_end..].to_vec()).unwrap();
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(response.as_bytes()).await.unwrap();
    (head, request_body)
}
