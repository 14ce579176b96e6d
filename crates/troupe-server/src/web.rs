//! The web page of `troupe serve` and `troupe play --web` (docs/web.md):
//! plain HTML, CSS and JavaScript modules under `web/`, embedded in the
//! binary and served at `/` and `/web/…` with a `default-src 'self'`
//! Content-Security-Policy, so the page loads nothing from elsewhere and
//! talks only to `/api/v1`.
//!
//! Also the few read-only routes the page needs that the JSON API did not
//! have (docs/web.md "Routes of the page"): the scenarios of a pack with
//! their difficulty presets and openings, the lines `troupe explore`
//! would try, the rendered transcript of a
//! path (`troupe transcript --json`), and the pictures `troupe graph
//! --format svg` and `troupe plot` draw. They are workspace routes like
//! the others (bearer token, OpenAPI document).

use axum::extract::Query;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde::Deserialize;
use serde_json::{json, Value};

use super::http::{json_response, Answer, App, PackRoute, Problem, Route, SessionRoute};

/// The page's files: (URL path, media type, bytes). Everything the page
/// loads is here; docs/web.md bounds their sum at 200 KB (a test checks).
pub const ASSETS: &[(&str, &str, &[u8])] = &[
    (
        "/",
        "text/html; charset=utf-8",
        include_bytes!("../../../web/index.html"),
    ),
    (
        "/web/app.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../web/app.js"),
    ),
    (
        "/web/api.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../web/api.js"),
    ),
    (
        "/web/dom.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../web/dom.js"),
    ),
    (
        "/web/icon.svg",
        "image/svg+xml",
        include_bytes!("../../../web/icon.svg"),
    ),
    (
        "/web/style.css",
        "text/css; charset=utf-8",
        include_bytes!("../../../web/style.css"),
    ),
];

/// The page's Content-Security-Policy: nothing but this origin, no inline
/// script, no framing (docs/web.md "Safety").
pub const CSP: &str = "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'";

fn asset(media: &'static str, bytes: &'static [u8]) -> Response {
    let mut r = (StatusCode::OK, bytes).into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(media));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    r
}

/// `GET /` and `GET /web/…`: the embedded page (no token needed: it holds
/// no data).
pub fn page_routes() -> Router<App> {
    ASSETS
        .iter()
        .fold(Router::new(), |router, (path, media, bytes)| {
            router.route(path, get(move || async move { asset(media, bytes) }))
        })
}

/// The workspace routes the page adds to `/api/v1/workspaces/{ws}`.
pub(super) fn api_routes() -> Vec<Route> {
    const JSON: &str = "application/json";
    const SVG: &str = "image/svg+xml";
    vec![
        Route {
            method: "get",
            path: "/packs/{hash}/scenarios",
            summary: "The pack's scenarios with what a session can choose: difficulty presets (and the default) and openings (docs/web.md).",
            body: None,
            ok: (200, JSON),
            handler: get(scenarios),
        },
        Route {
            method: "get",
            path: "/packs/{hash}/lines",
            summary: "The input lines `troupe explore` would try in `?scenario=ID` (default the first): its alphabet's lines, each with what it was derived for (Format 20.5).",
            body: None,
            ok: (200, JSON),
            handler: get(lines),
        },
        Route {
            method: "get",
            path: "/sessions/{id}/transcript",
            summary: "What `troupe transcript --json` prints: the path of `?at=ID` (or the last message), each part rendered (Format 20).",
            body: None,
            ok: (200, JSON),
            handler: get(transcript),
        },
        Route {
            method: "get",
            path: "/sessions/{id}/next",
            summary: "Who would say the first reply if the player said `?text=T` now (`&to=C`: a host's choice), under the scene's turn order: `{speaker, input, chosen}` (Format 18.9); the turn is not taken.",
            body: None,
            ok: (200, JSON),
            handler: get(next_speaker),
        },
        Route {
            method: "get",
            path: "/sessions/{id}/graph.svg",
            summary: "The session's scenario drawn as `troupe graph --format svg` draws it (Format 20.2).",
            body: None,
            ok: (200, SVG),
            handler: get(graph),
        },
        Route {
            method: "get",
            path: "/sessions/{id}/plot.svg",
            summary: "What `troupe plot` draws: the variables over the path of `?at=ID` (or the last message) (Format 20.4).",
            body: None,
            ok: (200, SVG),
            handler: get(plot),
        },
    ]
}

/// The names of a JSON object's keys, in order (`[]` for anything else).
fn keys(v: &Value) -> Vec<String> {
    v.as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

/// `GET /packs/{hash}/scenarios`: each scenario of the pack (Format 6) with
/// its difficulty presets (`default` and `options`, Format 8.8), its
/// openings' IDs (Format 6.3) and its cast (ID and display name: the
/// nickname, else the name, as the transcript shows it).
async fn scenarios(p: PackRoute) -> Answer {
    let pack = p.app.pack(&p.ws, &p.hash, false).await?;
    let bundle = pack.bundle();
    let characters = bundle["characters"].as_array().cloned().unwrap_or_default();
    let name_of = |id: &str| {
        characters
            .iter()
            .find(|c| c["id"].as_str() == Some(id))
            .and_then(|c| c["nickname"].as_str().or_else(|| c["name"].as_str()))
            .unwrap_or(id)
            .to_string()
    };
    let list: Vec<Value> = pack
        .scenarios()
        .into_iter()
        .map(|info| {
            let s = bundle["scenarios"]
                .as_array()
                .and_then(|a| {
                    a.iter()
                        .find(|s| s["id"].as_str() == Some(info.id.as_str()))
                })
                .cloned()
                .unwrap_or(Value::Null);
            let openings: Vec<Value> = s["openings"]
                .as_array()
                .map(|a| a.iter().filter_map(|o| o.get("id").cloned()).collect())
                .unwrap_or_default();
            let cast: Vec<Value> = s["cast"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|m| m["character"].as_str())
                        .map(|id| json!({"id": id, "name": name_of(id)}))
                        .collect()
                })
                .unwrap_or_default();
            json!({
                "id": info.id,
                "name": info.name,
                "description": info.description,
                "difficulty": {
                    "default": s["difficulty"]["default"],
                    "options": keys(&s["difficulty"]["options"]),
                },
                "openings": openings,
                "cast": cast,
            })
        })
        .collect();
    Ok(json_response(StatusCode::OK, &list))
}

#[derive(Debug, Deserialize)]
struct ScenarioQuery {
    #[serde(default)]
    scenario: Option<String>,
}

/// `GET /packs/{hash}/lines[?scenario=ID]`: the lines of the alphabet
/// `troupe explore` derives (Format 20.5) — `{text, for}` each, in its
/// order — from a search bounded to one state (the alphabet does not
/// depend on the bound).
async fn lines(p: PackRoute, Query(q): Query<ScenarioQuery>) -> Answer {
    let pack = p.app.pack(&p.ws, &p.hash, false).await?;
    let alphabet = tokio::task::spawn_blocking(move || {
        let settings = {
            let mut o = troupe::tools::ExploreSettings::default();
            o.scenario = q.scenario;
            o.mode = troupe::tools::ExploreMode::Search { states: 1 };
            o.depth = 1;
            o.seed = 0;
            o.jobs = 1;
            o
        };
        troupe::tools::explore(&pack, None, &settings, &mut |_| {}).map(|e| e.alphabet.lines)
    })
    .await
    .map_err(|_| Problem::internal("deriving the lines"))??;
    Ok(json_response(StatusCode::OK, &alphabet))
}

#[derive(Debug, Deserialize)]
struct AtQuery {
    #[serde(default)]
    at: Option<String>,
}

fn svg_response(svg: String) -> Response {
    let mut r = (StatusCode::OK, svg).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("image/svg+xml"),
    );
    r
}

/// `GET /sessions/{id}/transcript[?at=ID]`: [`troupe::History::transcript`].
async fn transcript(s: SessionRoute, Query(q): Query<AtQuery>) -> Answer {
    let (history, at) = s.history_at(q.at).await?;
    let t = history.transcript(Some(&at))?;
    Ok(json_response(StatusCode::OK, &t))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NextQuery {
    #[serde(default)]
    text: String,
    #[serde(default)]
    to: Option<String>,
}

/// `GET /sessions/{id}/next?text=T[&to=C]`: [`troupe::Session::next_speaker`]
/// at the session's current message (Format 18.9) — who would answer
/// `text`, and why; nothing is written. A `to` that is not a speaker is
/// refused as the turn would be.
async fn next_speaker(s: SessionRoute, Query(q): Query<NextQuery>) -> Answer {
    let locked = s.live().await?;
    let next = locked
        .session()?
        .next_speaker(&q.text, q.to.as_deref().filter(|t| !t.is_empty()))?;
    Ok(json_response(StatusCode::OK, &next))
}

/// `GET /sessions/{id}/graph.svg`: [`troupe::tools::graph`] of the
/// session's scenario as SVG; the page marks fired events on it.
async fn graph(s: SessionRoute) -> Answer {
    let (pack, history) = s.recorded().await?;
    let scenario = history.scenario().to_string();
    let svg = tokio::task::spawn_blocking(move || {
        troupe::tools::graph(&pack, Some(&scenario), troupe::tools::GraphFormat::Svg)
    })
    .await
    .map_err(|_| Problem::internal("drawing a graph"))??;
    Ok(svg_response(svg.text))
}

/// `GET /sessions/{id}/plot.svg[?at=ID]`: [`troupe::pictures::plot`] of
/// the path of `at`.
async fn plot(s: SessionRoute, Query(q): Query<AtQuery>) -> Answer {
    let (history, at) = s.history_at(q.at).await?;
    let svg = tokio::task::spawn_blocking(move || {
        troupe::pictures::plot(&history, &{
            let mut o = troupe::pictures::PlotOptions::default();
            o.at = Some(at);
            o
        })
    })
    .await
    .map_err(|_| Problem::internal("drawing a plot"))??;
    Ok(svg_response(svg))
}

/// A folder removed when dropped (the temporary database of `troupe play
/// --web`).
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The workspace `troupe play --web` plays in.
pub const PLAY_WORKSPACE: &str = "play";

/// `troupe play PACK --web` (docs/web.md): serves the page and the API on
/// `listen` over a new SQLite database in a temporary folder, uploads
/// `package` (a compiled package, Format 14.4) into workspace `play`
/// with a token made for it, prints the page's URL on its own line —
/// `http://ADDR/#ws=play&token=…&pack=HASH`, what the page logs in with —
/// and runs until SIGTERM or Ctrl-C (no grace period: requests in flight
/// are cut); the folder is removed then. `open`
/// starts the system browser on the URL (`xdg-open`) when there is one,
/// else says so on stderr.
pub fn play(package: Vec<u8>, listen: &str, open: bool) -> Result<(), String> {
    let mut raw = [0u8; 8];
    getrandom::fill(&mut raw).map_err(|_| "no randomness".to_string())?;
    let dir = TempDir(std::env::temp_dir().join(format!("troupe-play-{}", super::db::hex(&raw))));
    std::fs::create_dir_all(&dir.0).map_err(|e| {
        format!(
            "cannot make a folder in {}: {e}",
            std::env::temp_dir().display()
        )
    })?;
    let database = dir.0.join("troupe.db").to_string_lossy().into_owned();
    let token = super::create_token(&database, PLAY_WORKSPACE)?;
    let config = super::Config {
        listen: listen.to_string(),
        database,
        ..super::Config::default()
    };
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .try_init();
    super::runtime()?.block_on(async move {
        let db = super::db::Db::open(&config.database).await?;
        let (listener, bound, app, router) = super::bind(db, &config).await?;
        // No graceful wait: a browser's keep-alive connections would hold
        // the process for the shutdown's grace period, and the folder is
        // thrown away anyway.
        drop(app);
        let server = tokio::spawn(super::serve_connections(
            listener,
            router,
            std::time::Duration::from_secs(config.header_read_timeout_secs.max(1)),
            std::future::pending::<()>(),
        ));
        // The pack goes in through the API itself, as a client's would.
        let put = format!("http://{bound}/api/v1/workspaces/{PLAY_WORKSPACE}/packs");
        let auth = format!("Bearer {token}");
        let hash = tokio::task::spawn_blocking(move || upload(&put, &auth, &package))
            .await
            .map_err(|_| "uploading the pack failed".to_string())??;
        let url = format!("http://{bound}/#ws={PLAY_WORKSPACE}&token={token}&pack={hash}");
        println!("{url}");
        use std::io::Write;
        let _ = std::io::stdout().flush();
        if open {
            open_browser(&url);
        }
        // Ctrl-C or SIGTERM stops the server task.
        let stop = std::sync::Arc::new(tokio::sync::Notify::new());
        let on_ctrl_c = stop.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                on_ctrl_c.notify_one();
            }
        });
        #[cfg(unix)]
        if let Ok(mut term) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            let on_term = stop.clone();
            tokio::spawn(async move {
                term.recv().await;
                on_term.notify_one();
            });
        }
        let abort = server.abort_handle();
        tokio::spawn(async move {
            stop.notified().await;
            abort.abort();
        });
        match server.await {
            Ok(()) => Ok(()),
            Err(e) if e.is_cancelled() => Ok(()),
            Err(_) => Err("the server stopped".to_string()),
        }
    })
}

/// PUTs `package` to `url`; the pack's hash.
fn upload(url: &str, auth: &str, package: &[u8]) -> Result<String, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut res = agent
        .put(url)
        .header("Authorization", auth)
        .content_type("application/octet-stream")
        .send(package)
        .map_err(|e| format!("cannot upload the pack: {e}"))?;
    let status = res.status().as_u16();
    let body = res
        .body_mut()
        .read_to_string()
        .map_err(|e| format!("cannot upload the pack: {e}"))?;
    if status != 200 && status != 201 {
        return Err(format!("the server refused the pack ({status}): {body}"));
    }
    let doc: Value = serde_json::from_str(&body).map_err(|e| format!("upload answer: {e}"))?;
    doc["hash"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| "the upload answer has no hash".to_string())
}

/// Starts the system browser on `url` with `xdg-open`, or says there is
/// none.
fn open_browser(url: &str) {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join("xdg-open").is_file()));
    if !found {
        eprintln!("troupe play: no browser to start (xdg-open was not found); open the URL above yourself");
        return;
    }
    match std::process::Command::new("xdg-open")
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(_) => eprintln!("troupe play: opening the page in the system browser"),
        Err(e) => {
            eprintln!("troupe play: cannot start xdg-open ({e}); open the URL above yourself")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/web.md: the page's assets are at most 200 KB in all.
    #[test]
    fn the_page_is_at_most_200_kb() {
        let total: usize = ASSETS.iter().map(|(_, _, b)| b.len()).sum();
        assert!(total <= 200 * 1024, "{total} bytes");
    }

    /// The page loads nothing from elsewhere: no `http:`/`https:` URL and
    /// no `//host` reference in any asset (an XML namespace name is no
    /// reference).
    #[test]
    fn the_page_names_no_other_origin() {
        for (path, _, bytes) in ASSETS {
            let text = std::str::from_utf8(bytes)
                .expect("UTF-8 asset")
                .replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
            for bad in ["http://", "https://", "src=\"//", "href=\"//", "url(//"] {
                assert!(!text.contains(bad), "{path} contains {bad}");
            }
        }
    }
}
