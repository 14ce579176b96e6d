//! `troupe serve --config` refusals made before anything starts
//! (docs/server.md "Start", "Runtimes"): exit 2 and a message naming the
//! setting.

use std::process::Command;

use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_troupe");

/// `troupe serve --config` with `config`: exit code and stderr.
fn serve_with(config: &serde_json::Value, test: &str) -> (Option<i32>, String) {
    let dir = std::env::temp_dir().join(format!(
        "troupe-server-config-{test}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("config.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let out = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&path)
        .arg("--database")
        .arg(dir.join("troupe.db"))
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A model whose one request may take as long as the HTTP request that
/// waits for it is refused at load (the model's default 60 s against the
/// default 30 s included), naming both settings; nothing is opened.
#[test]
fn model_timeout_not_below_request_timeout_is_refused() {
    for (config, model_secs, request_secs) in [
        (
            json!({"models": {"local": {"endpoint": "http://127.0.0.1:9/v1"}}}),
            60,
            30,
        ),
        (
            json!({"request_timeout_secs": 20, "models": {"local": {"endpoint": "http://127.0.0.1:9/v1", "timeout_secs": 20}}}),
            20,
            20,
        ),
    ] {
        let (code, err) = serve_with(&config, "refused");
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.contains(&format!("models.local.timeout_secs ({model_secs}) is not below request_timeout_secs ({request_secs})")),
            "{err}"
        );
    }
}

/// docs/server.md "Start": `pg_connections` is 1 to 1,000; 0 or 1,001 is
/// refused at load, naming the setting (on SQLite too: the file is checked
/// before the database is opened).
#[test]
fn pg_connections_out_of_range_is_refused() {
    for n in [0u64, 1001] {
        let (code, err) = serve_with(&json!({"pg_connections": n}), "pg_connections");
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.contains(&format!("pg_connections ({n}) is not between 1 and 1000")),
            "{err}"
        );
    }
}

/// A `--listen` that is not HOST:PORT with a port of 0–65535 is a usage
/// error (exit 2) naming it, before anything is opened (breaker: port
/// 99999 was exit 3, a failure to listen).
#[test]
fn a_listen_address_without_a_valid_port_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    for listen in ["127.0.0.1:99999", "127.0.0.1", "127.0.0.1:http"] {
        let out = Command::new(BIN)
            .args(["serve", "--listen", listen, "--database"])
            .arg(dir.path().join("troupe.db"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{listen}: {err}");
        assert!(
            err.contains(&format!("`{listen}` is not HOST:PORT")),
            "{err}"
        );
        assert!(!dir.path().join("troupe.db").exists(), "nothing opened");
    }
}

/// A configuration file is read as every input is (Format 16,
/// docs/server.md "Start"): one that is not a regular file (a FIFO no one
/// writes to, a folder) is refused at once — exit 2 naming it — instead of
/// waiting for a writer, and so is one over 64 MiB.
#[cfg(unix)]
#[test]
fn a_configuration_that_is_not_a_regular_file_within_the_input_bound_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.json");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let big = dir.path().join("big.json");
    // 64 MiB + 1 bytes (sparse): refused by its size before it is read.
    std::fs::File::create(&big)
        .unwrap()
        .set_len((64 << 20) + 1)
        .unwrap();
    for (config, says) in [
        (&fifo, "not a regular file"),
        (&dir.path().to_path_buf(), "not a regular file"),
        (&big, "the limit is 67108864 bytes"),
    ] {
        let out = Command::new(BIN)
            .args(["serve", "--listen", "127.0.0.1:0", "--config"])
            .arg(config)
            .arg("--database")
            .arg(dir.path().join("troupe.db"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {err}", config.display());
        assert!(err.contains(says), "{err}");
        assert!(err.contains(&config.display().to_string()), "{err}");
        assert!(!dir.path().join("troupe.db").exists(), "nothing opened");
    }
}

/// A configured model's request settings hold Format 24.1's bounds, as
/// the CLI's flags do: a negative temperature or `max_tokens` 0 is
/// refused at load, naming the model.
#[test]
fn a_models_settings_outside_format_24_1_are_refused() {
    for (model, says) in [
        (
            json!({"endpoint": "http://127.0.0.1:9/v1", "timeout_secs": 5, "temperature": -0.5}),
            "models.local: the temperature -0.5 is not a finite number of at least 0",
        ),
        (
            json!({"endpoint": "http://127.0.0.1:9/v1", "timeout_secs": 5, "max_tokens": 0}),
            "models.local: max_tokens is 0",
        ),
    ] {
        let (code, err) = serve_with(&json!({"models": {"local": model}}), "settings");
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains(says), "{err}");
    }
}
