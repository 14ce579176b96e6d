//! The HTTP client (Format 24.6): one `POST {endpoint}/chat/completions`
//! with bounded retries; every failure a [`Failure`] with a stable code.
//! The API key is sent in the `Authorization` header only and never
//! appears in a failure's message.

use std::time::Duration;

use super::Failure;
use crate::diag::Code;

/// How many times a 429 or 5xx answer is retried (Format 24.6).
pub const RETRIES: u32 = 2;
/// The longest `Retry-After` honoured, in seconds.
pub const MAX_RETRY_AFTER: u64 = 30;

/// A blocking Chat Completions client.
pub struct HttpClient {
    agent: ureq::Agent,
    /// The URL called (Format 24.6).
    url: String,
    /// `url` as messages show it: no credential (Format 24.6).
    shown: String,
    api_key: Option<String>,
    /// The first backoff; doubled at each retry.
    backoff: Duration,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("url", &self.shown)
            .field("api_key", &self.api_key.as_ref().map(|_| "(set)"))
            .finish()
    }
}

impl HttpClient {
    /// A client of `endpoint` (e.g. `http://127.0.0.1:8080/v1`); `timeout`
    /// bounds each request whole (connecting, sending, the answer).
    pub fn new(endpoint: &str, api_key: Option<String>, timeout: Duration) -> HttpClient {
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            .build();
        let (url, shown) = call_url(endpoint);
        HttpClient {
            agent: config.into(),
            url,
            shown,
            api_key,
            backoff: Duration::from_millis(500),
        }
    }

    /// Posts `body` (JSON) and returns the answer's body on status 200.
    pub fn post(&self, body: &str) -> Result<String, Failure> {
        let mut attempt = 0;
        loop {
            let mut req = self
                .agent
                .post(&self.url)
                .header("Content-Type", "application/json");
            if let Some(k) = &self.api_key {
                req = req.header("Authorization", &format!("Bearer {k}"));
            }
            let wait = self.backoff * 2u32.pow(attempt);
            let mut resp = match req.send(body.as_bytes()) {
                Ok(r) => r,
                Err(e) => return Err(transport(&self.url, &self.shown, e)),
            };
            let status = resp.status().as_u16();
            let retry_after = resp
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok());
            let text = resp
                .body_mut()
                .with_config()
                .limit(16 << 20)
                .read_to_string();
            match status {
                200..=299 => return text.map_err(|e| unread_body(&self.shown, e)),
                401 | 403 => {
                    return Err(Failure::new(
                        Code::ModelAuth,
                        format!(
                            "{} refused the request with status {status}: check the API key (--api-key-env)",
                            self.shown
                        ),
                    ))
                }
                429 | 500..=599 if attempt < RETRIES => {
                    let pause = match (status, retry_after) {
                        (429, Some(s)) => Duration::from_secs(s.min(MAX_RETRY_AFTER)),
                        _ => wait,
                    };
                    std::thread::sleep(pause);
                    attempt += 1;
                }
                429 => {
                    return Err(Failure::new(
                        Code::ModelRateLimited,
                        format!(
                            "{} answered 429 (rate limited) {} times; giving up",
                            self.shown,
                            RETRIES + 1
                        ),
                    ))
                }
                500..=599 => {
                    return Err(Failure::new(
                        Code::ModelServerError,
                        format!(
                            "{} answered status {status} {} times; giving up",
                            self.shown,
                            RETRIES + 1
                        ),
                    ))
                }
                _ => {
                    return Err(Failure::new(
                        Code::ModelHttp,
                        format!("{} answered status {status}", self.shown),
                    ))
                }
            }
        }
    }
}

/// The URL called for `endpoint` and the same URL as messages show it
/// (Format 24.6): `/chat/completions` appended to the path, before any
/// query or fragment; in the shown form the user information is `***@`,
/// a query `?***`, and a fragment left out.
pub fn call_url(endpoint: &str) -> (String, String) {
    let cut = endpoint.find(['?', '#']).unwrap_or(endpoint.len());
    let (base, tail) = endpoint.split_at(cut);
    let base = base.trim_end_matches('/');
    let url = format!("{base}/chat/completions{tail}");
    // The authority runs from after `scheme://` to the next `/`.
    let start = base.find("://").map_or(0, |i| i + 3);
    let end = base[start..].find('/').map_or(base.len(), |i| start + i);
    let mut shown = String::with_capacity(url.len());
    match base[start..end].rfind('@') {
        Some(at) => {
            shown.push_str(&base[..start]);
            shown.push_str("***");
            shown.push_str(&base[start + at..]);
        }
        None => shown.push_str(base),
    }
    shown.push_str("/chat/completions");
    if tail.starts_with('?') {
        shown.push_str("?***");
    }
    (url, shown)
}

/// A 2xx answer whose body could not be read whole (Format 24.6): a body
/// still arriving when `--timeout` runs out (a server trickling it) is
/// MODEL_TIMEOUT, since no whole answer came in time; anything else
/// (broken off, too long, not UTF-8) is MODEL_BAD_RESPONSE.
fn unread_body(url: &str, e: ureq::Error) -> Failure {
    let timed_out = match &e {
        ureq::Error::Timeout(_) => true,
        ureq::Error::Io(io) => io.kind() == std::io::ErrorKind::TimedOut,
        _ => false,
    };
    if timed_out {
        Failure::new(
            Code::ModelTimeout,
            format!("{url} did not send its whole answer within the timeout (--timeout)"),
        )
    } else {
        Failure::new(
            Code::ModelBadResponse,
            format!("the answer from {url} could not be read: {e}"),
        )
    }
}

fn transport(raw: &str, url: &str, e: ureq::Error) -> Failure {
    match e {
        ureq::Error::Timeout(_) => Failure::new(
            Code::ModelTimeout,
            format!("{url} did not answer within the timeout (--timeout)"),
        ),
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => Failure::new(
            Code::ModelTimeout,
            format!("{url} did not answer within the timeout (--timeout)"),
        ),
        ureq::Error::Io(io) => Failure::new(
            Code::ModelUnreachable,
            format!("cannot reach {url}: {}", io.kind()),
        ),
        ureq::Error::HostNotFound | ureq::Error::ConnectionFailed => Failure::new(
            Code::ModelUnreachable,
            format!("cannot reach {url}: no server answers there"),
        ),
        // The transport's own words may quote the URL: never its secrets.
        other => Failure::new(
            Code::ModelUnreachable,
            format!(
                "cannot reach {url}: {}",
                other.to_string().replace(raw, url)
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::call_url;

    #[test]
    fn the_url_called_and_the_url_shown() {
        let (url, shown) = call_url("https://me:s3cret@llm.example/v1/?key=k#f");
        assert_eq!(
            url,
            "https://me:s3cret@llm.example/v1/chat/completions?key=k#f"
        );
        assert_eq!(shown, "https://***@llm.example/v1/chat/completions?***");
        let (url, shown) = call_url("http://127.0.0.1:8080/v1");
        assert_eq!(url, "http://127.0.0.1:8080/v1/chat/completions");
        assert_eq!(shown, url);
        // An `@` in the path is not user information.
        let (_, shown) = call_url("http://h/a@b/v1");
        assert_eq!(shown, "http://h/a@b/v1/chat/completions");
        let (_, shown) = call_url("http://h/v1#frag");
        assert_eq!(shown, "http://h/v1/chat/completions");
    }
}
