//! A small OpenAI-compatible Chat Completions server on the loopback
//! interface (tiny_http), started by a test: it serves canned answers in
//! order and records what it received. Nothing leaves the machine.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

/// One canned answer of the test server.
#[derive(Clone)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// The body.
    pub body: String,
    /// Extra headers (`Retry-After`).
    pub headers: Vec<(String, String)>,
    /// How long to wait before answering.
    pub delay: Duration,
}

/// A 200 answer whose message content is `content` as JSON text, with
/// usage 100 + 20 = 120 tokens.
pub fn ok(content: Value) -> Answer {
    Answer {
        status: 200,
        body: json!({
            "choices": [{"message": {"role": "assistant", "content": content.to_string()}, "finish_reason": ""}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
        })
        .to_string(),
        headers: Vec::new(),
        delay: Duration::ZERO,
    }
}

/// An answer with status `code` and `body`.
pub fn status(code: u16, body: &str) -> Answer {
    Answer {
        status: code,
        body: body.into(),
        headers: Vec::new(),
        delay: Duration::ZERO,
    }
}

/// What the server received: the Authorization header and the body.
pub type Seen = Arc<Mutex<Vec<(Option<String>, Value)>>>;

/// A running server; dropping it stops it.
pub struct Server {
    /// The endpoint (`http://127.0.0.1:PORT/v1`).
    pub url: String,
    /// What it received.
    pub seen: Seen,
    server: Arc<tiny_http::Server>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Serves `answers` in order (the last one again when they run out).
pub fn serve(answers: Vec<Answer>) -> Server {
    let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
    let port = server.server_addr().to_ip().unwrap().port();
    let seen: Seen = Arc::default();
    let (s, log) = (server.clone(), seen.clone());
    let thread = std::thread::spawn(move || {
        for (i, mut req) in s.incoming_requests().enumerate() {
            let mut body = String::new();
            let _ = req.as_reader().read_to_string(&mut body);
            let auth = req
                .headers()
                .iter()
                .find(|h| h.field.equiv("Authorization"))
                .map(|h| h.value.to_string());
            log.lock()
                .unwrap()
                .push((auth, serde_json::from_str(&body).unwrap_or(Value::Null)));
            let a = answers[i.min(answers.len() - 1)].clone();
            std::thread::sleep(a.delay);
            let mut resp = tiny_http::Response::from_string(a.body).with_status_code(a.status);
            for (k, v) in &a.headers {
                resp = resp.with_header(
                    tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes()).unwrap(),
                );
            }
            let _ = req.respond(resp);
        }
    });
    Server {
        url: format!("http://127.0.0.1:{port}/v1"),
        seen,
        server,
        thread: Some(thread),
    }
}
