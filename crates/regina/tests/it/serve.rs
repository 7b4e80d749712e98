//! `regina serve` itself: a start with a configured database and no encryption key makes up no
//! key (the development key is for the private development cluster only) and keeps refusing
//! encrypting queues.

use std::path::PathBuf;
use std::process::Stdio;

use regina_testkit::{eventually, TestBroker};
use serde_json::json;
use tokio::process::Command;

/// A scratch project directory (a Cargo workspace root, so `serve` would put `.regina/` here).
struct Project(PathBuf);

impl Project {
    fn new() -> Project {
        let dir = std::env::temp_dir().join(format!("regina-serve-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("Cargo.toml"), "[workspace]\n").unwrap();
        Project(dir)
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_database_without_a_key_refuses_encrypting_queues_and_writes_no_key() {
    // The test kit's broker only provides a fresh database; the binary serves it too.
    let database = TestBroker::start().await;
    let project = Project::new();
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let mut command = Command::new(env!("CARGO_BIN_EXE_regina"));
    command
        .arg("serve")
        .current_dir(&project.0)
        .env("DATABASE_URL", &database.database_url)
        .env("HOST", "127.0.0.1")
        .env("PORT", port.to_string())
        .env("FILE_BUFFER_DIR", project.0.join("buffer"))
        .env("WEBAPP_ROOT", "off")
        .env_remove("REGINA_ENCRYPTION_KEY")
        .env_remove("QUEEN_ENCRYPTION_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let mut child = command.spawn().unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let http = regina_testkit::http();
    eventually("regina serve becomes healthy", || {
        assert!(child.try_wait().unwrap().is_none(), "regina serve exited");
        let health = http.get(format!("{base}/health")).send();
        async move {
            match health.await {
                Ok(r) if r.status() == 200 => Ok(()),
                Ok(r) => Err(r.status().to_string()),
                Err(e) => Err(e.to_string()),
            }
        }
    })
    .await;
    let answer = http
        .post(format!("{base}/api/v1/configure"))
        .json(&json!({"queue": "secret", "options": {"encryptionEnabled": true}}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 400);
    let body: serde_json::Value = answer.json().await.unwrap();
    assert_eq!(body["code"], "encryption_unavailable", "{body}");
    assert!(
        !project.0.join(".regina").exists(),
        "no development directory, hence no key, on a configured database"
    );
    child.kill().await.unwrap();
}
