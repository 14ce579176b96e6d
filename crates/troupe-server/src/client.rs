//! `troupe test PACK --server URL --workspace ID` (docs/server.md "Tests
//! on the deployment"): the pack directory zipped and posted to
//! `POST /api/v1/workspaces/{ws}/packs:test`, which runs `troupe test` on
//! it and stores nothing; the answer holds the text, JSON and JUnit
//! reports and the exit code of the run, so the command prints what a
//! local run prints.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

/// What the deployment answered: the run's exit code and its three
/// reports (Format 21.2).
#[derive(Debug)]
pub struct RemoteRun {
    pub exit_code: i32,
    pub text: String,
    pub json: String,
    pub junit: String,
}

/// The files of pack directory `dir` as a zip, paths relative to it
/// (`.git` folders and symbolic links left out).
fn zip_dir(dir: &Path) -> Result<Vec<u8>, String> {
    use zip::write::SimpleFileOptions;
    if !dir.is_dir() {
        return Err(format!(
            "{} is not a pack directory: `troupe test --server` sends a pack directory",
            dir.display()
        ));
    }
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default();
    let walk = walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.file_name() != ".git");
    for entry in walk {
        let entry = entry.map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        if !entry.file_type().is_file() {
            continue;
        }
        let rel = entry
            .path()
            .strip_prefix(dir)
            .map_err(|_| "a path outside the pack".to_string())?;
        let name = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        let bytes = std::fs::read(entry.path())
            .map_err(|e| format!("cannot read {}: {e}", entry.path().display()))?;
        zip.start_file(name, options)
            .and_then(|()| zip.write_all(&bytes).map_err(Into::into))
            .map_err(|e| format!("cannot zip the pack: {e}"))?;
    }
    zip.finish()
        .map(std::io::Cursor::into_inner)
        .map_err(|e| format!("cannot zip the pack: {e}"))
}

/// Percent-encodes a query value.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Runs the tests of `pack` on the server at `url` in `workspace`, with
/// bearer `token`; `Err` is the reason (a usage error, the server
/// unreachable, or its problem document's detail).
pub fn run_remote(
    pack: &Path,
    url: &str,
    workspace: &str,
    token: &str,
    test: Option<&str>,
) -> Result<RemoteRun, String> {
    let body = zip_dir(pack)?;
    let mut target = format!(
        "{}/api/v1/workspaces/{}/packs:test?format=all&name={}",
        url.trim_end_matches('/'),
        encode(workspace),
        encode(&pack.display().to_string())
    );
    if let Some(t) = test {
        target.push_str(&format!("&test={}", encode(t)));
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(600)))
        .http_status_as_error(false)
        .build()
        .into();
    let mut resp = agent
        .post(&target)
        .header("Authorization", &format!("Bearer {token}"))
        .header("Content-Type", "application/zip")
        .send(&body[..])
        .map_err(|e| format!("cannot reach {url}: {e}"))?;
    let status = resp.status().as_u16();
    let text = resp
        .body_mut()
        .with_config()
        .limit(64 << 20)
        .read_to_string()
        .map_err(|e| format!("cannot read the answer of {url}: {e}"))?;
    let doc: Value = serde_json::from_str(&text)
        .map_err(|_| format!("{url} answered {status} with a body that is not JSON"))?;
    if status != 200 {
        let detail = doc["detail"].as_str().unwrap_or("no detail");
        let code = doc["code"].as_str().unwrap_or("?");
        return Err(format!("{url} answered {status} ({code}): {detail}"));
    }
    let field = |k: &str| doc[k].as_str().unwrap_or_default().to_string();
    Ok(RemoteRun {
        exit_code: doc["exit_code"].as_i64().unwrap_or(3) as i32,
        text: field("text"),
        json: field("json"),
        junit: field("junit"),
    })
}
