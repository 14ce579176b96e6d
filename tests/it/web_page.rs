//! The web page (docs/web.md, issue 40) in a real headless Chromium,
//! driven through chromedriver with fantoccini, against `troupe play PACK
//! --web` (the page and the API on a temporary SQLite database).
//!
//! Skips with a plain message when `chromium` or `chromedriver` is not
//! installed, and fails then when `TROUPE_REQUIRE_CHROMIUM=1` (`.ci/run`
//! sets it; `scripts/with-chromium.sh` installs both from the machine's
//! Debian packages). Screenshots of each view go to
//! `target/web-screens/`.
//!
//! Expected values come from elsewhere than the page: the golden fixture
//! `tests/golden_rules_deal.yaml` of the negotiation pack (its inputs, the
//! events it fires and its ending, derived by hand there), `troupe state
//! --json` of the session file at each message, and the API's own export.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_troupe");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// A child process stopped when dropped: SIGTERM (so `troupe play --web`
/// removes its temporary folder), SIGKILL after 5 s.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Where `name` is on PATH.
fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// chromium and chromedriver, or `None` after saying why (a failure
/// instead when `TROUPE_REQUIRE_CHROMIUM=1`).
fn browser() -> Option<(PathBuf, PathBuf)> {
    let found = which("chromium")
        .or_else(|| which("chromium-browser"))
        .zip(which("chromedriver"));
    if found.is_none() {
        let msg = "no chromium/chromedriver installed: the web page's browser tests are skipped (scripts/with-chromium.sh installs them)";
        if std::env::var("TROUPE_REQUIRE_CHROMIUM").as_deref() == Ok("1") {
            panic!("TROUPE_REQUIRE_CHROMIUM=1 but {msg}");
        }
        eprintln!("{msg}");
    }
    found
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// `troupe play PACK --web` and the URL it printed.
fn play_web(pack: &Path) -> (Proc, String) {
    let mut child = Command::new(BIN)
        .arg("play")
        .arg(pack)
        .args(["--web", "--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("troupe play --web starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("a URL line");
    let url = line.trim().to_string();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.contains("/#ws=play&token="),
        "printed {url:?}"
    );
    (Proc(child), url)
}

/// The API base and bearer token of a `troupe play --web` URL.
fn api_of(url: &str) -> (String, String) {
    let (base, frag) = url.split_once("/#").expect("a fragment");
    let token = frag
        .split('&')
        .find_map(|kv| kv.strip_prefix("token="))
        .expect("a token");
    (format!("{base}/api/v1/workspaces/play"), token.to_string())
}

fn http_get(url: &str, token: &str) -> String {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut res = agent
        .get(url)
        .header("Authorization", &format!("Bearer {token}"))
        .call()
        .expect("GET");
    assert_eq!(res.status().as_u16(), 200, "GET {url}");
    res.body_mut().read_to_string().expect("a text body")
}

/// chromedriver on a loopback port, ready.
fn chromedriver(driver: &Path) -> (Proc, String) {
    let port = free_port();
    let child = Command::new(driver)
        .arg(format!("--port={port}"))
        .arg("--allowed-ips=127.0.0.1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver starts");
    let url = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    loop {
        if ureq::get(&format!("{url}/status")).call().is_ok() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "chromedriver did not answer"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (Proc(child), url)
}

fn screens() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(ROOT).join("target"));
    let dir = target.join("web-screens");
    std::fs::create_dir_all(&dir).expect("target/web-screens");
    dir
}

async fn connect(chromium: &Path, driver: &str, profile: &Path, downloads: &Path) -> Client {
    let caps = json!({
        "browserName": "chrome",
        "goog:loggingPrefs": {"browser": "ALL"},
        "goog:chromeOptions": {
            "binary": chromium,
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--window-size=1280,800",
                format!("--user-data-dir={}", profile.display()),
            ],
            "prefs": {
                "download.default_directory": downloads,
                "download.prompt_for_download": false,
            },
        },
    });
    let caps = match caps {
        Value::Object(m) => m,
        _ => unreachable!(),
    };
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(driver)
        .await
        .expect("a WebDriver session")
}

/// Runs `js` (a function body returning a value) until it returns
/// something truthy; that value.
async fn until(c: &Client, what: &str, js: &str) -> Value {
    let started = Instant::now();
    loop {
        let v = c.execute(js, vec![]).await.expect("script runs");
        let truthy =
            !matches!(&v, Value::Null | Value::Bool(false)) && v != json!("") && v != json!(0);
        if truthy {
            return v;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The page has finished what it was doing and shows message `id` as
/// current (inspect and graph loaded for it).
async fn settled(c: &Client, id: Option<&str>) -> String {
    let cond = match id {
        Some(id) => format!("document.body.dataset.current === {id:?}"),
        None => "!!document.body.dataset.current".to_string(),
    };
    let v = until(
        c,
        &format!("message {id:?} current"),
        &format!("return document.body.dataset.busy === '0' && {cond} && document.getElementById('inspect').dataset.loaded === document.body.dataset.current && document.body.dataset.current"),
    )
    .await;
    v.as_str().expect("an ID").to_string()
}

async fn shot(c: &Client, name: &str) {
    let png = c.screenshot().await.expect("a screenshot");
    std::fs::write(screens().join(name), png).expect("write a screenshot");
}

async fn current(c: &Client) -> String {
    settled(c, None).await
}

/// What the page's Inspect view shows as the state, parsed.
async fn shown_state(c: &Client) -> Value {
    let text = c
        .find(Locator::Id("state-json"))
        .await
        .expect("#state-json")
        .prop("textContent")
        .await
        .expect("text")
        .unwrap_or_default();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("state JSON: {e}: {text}"))
}

/// The views (Play, Inspect, Graph & plot, Tests) wider than `width` px:
/// each is shown in turn and the page's scroll width measured; Play is
/// shown again after.
async fn too_wide(c: &Client, width: u32) -> Value {
    let v = c
        .execute(
            &format!(
                "const wide = [];
                 for (const v of ['inspect', 'graph', 'tests', 'play']) {{
                   document.getElementById('tab-' + v).click();
                   const w = document.documentElement.scrollWidth;
                   if (w > {width}) wide.push([v, w]);
                 }}
                 return wide;"
            ),
            vec![],
        )
        .await
        .expect("script");
    v
}

/// The page's controls without a name a screen reader reads (a label,
/// an aria-label or its text), as HTML.
async fn unnamed(c: &Client) -> Value {
    c.execute(
        "return [...document.querySelectorAll('input, select, button, textarea, summary')].filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !e.textContent.trim()).map(e => e.outerHTML)",
        vec![],
    )
    .await
    .expect("script")
}

/// Resources the page asked of anything but 127.0.0.1 (the Resource
/// Timing entries: every script, stylesheet, image and fetch).
async fn off_host(c: &Client) -> Value {
    c.execute("return performance.getEntriesByType('resource').map(e => e.name).filter(n => !n.startsWith('http://127.0.0.1:') && !n.startsWith('blob:'))", vec![])
        .await
        .expect("script")
}

/// The JSON a `<pre>` of the page shows, parsed.
async fn shown_json(c: &Client, id: &str) -> Value {
    let text = c
        .find(Locator::Id(id))
        .await
        .unwrap_or_else(|_| panic!("#{id}"))
        .prop("textContent")
        .await
        .expect("text")
        .unwrap_or_default();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("#{id} JSON: {e}: {text}"))
}

/// `troupe state PACK SESSION --at ID --json`.
fn cli_state(pack: &Path, session: &Path, at: &str) -> Value {
    let out = Command::new(BIN)
        .arg("state")
        .arg(pack)
        .arg(session)
        .args(["--at", at, "--json"])
        .output()
        .expect("troupe state");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("state JSON")
}

async fn say(c: &Client, line: &str) -> String {
    let before = current(c).await;
    let input = c.find(Locator::Id("line")).await.expect("#line");
    input
        .send_keys(&format!("{line}\u{E007}"))
        .await
        .expect("typed");
    let id = until(
        c,
        "the turn's answer",
        &format!("return document.body.dataset.busy === '0' && document.body.dataset.current !== {before:?} && document.body.dataset.current"),
    )
    .await;
    settled(c, id.as_str()).await
}

/// Severe entries of the browser's console log (chromedriver's log
/// endpoint; fantoccini has no call for it).
fn console_errors(driver: &str, session: &str) -> Vec<String> {
    let mut res = ureq::post(&format!("{driver}/session/{session}/se/log"))
        .content_type("application/json")
        .send(json!({"type": "browser"}).to_string().as_bytes())
        .expect("the browser log");
    let v: Value = serde_json::from_str(&res.body_mut().read_to_string().expect("log body"))
        .expect("log JSON");
    v["value"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter(|e| e["level"] == "SEVERE")
        .map(|e| e["message"].as_str().unwrap_or("").to_string())
        .collect()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

/// The golden deal of everyday-negotiation played by typing into the
/// page, with an undo making a branch on the way; the state shown at each
/// message is `troupe state --json` there; the ending, the tree, the
/// graph's marks, the download, the console and the paint time checked;
/// screenshots of each view.
#[test]
fn the_page_plays_the_negotiation_to_its_ending() {
    let Some((chromium, driver_bin)) = browser() else {
        return;
    };
    let pack = Path::new(ROOT).join("examples/packs/everyday-negotiation");
    let (_server, url) = play_web(&pack);
    let (api, token) = api_of(&url);
    let (_driver, driver) = chromedriver(&driver_bin);
    let tmp = tempfile::tempdir().expect("a temp dir");
    let downloads = tmp.path().join("downloads");
    std::fs::create_dir_all(&downloads).expect("downloads");
    runtime().block_on(async {
        let c = connect(&chromium, &driver, &tmp.path().join("profile"), &downloads).await;
        c.goto(&url).await.expect("the page loads");
        // Logged in from the URL's fragment, which left the address bar.
        let loaded = "return document.querySelectorAll('#pack option[value]').length > 0 && document.getElementById('scenario').value === 'used_car_negotiation'";
        until(&c, "the pack list", loaded).await;
        let page = c.current_url().await.expect("url").to_string();
        assert!(!page.contains("token"), "{page}");
        // Time to first paint of the play view, from navigation start
        // (Performance API), once the browser is started: the median of
        // three loads (the token now comes from sessionStorage).
        let mut paints = Vec::new();
        for _ in 0..3 {
            c.goto(&page).await.expect("the page loads");
            let paint = until(
                &c,
                "a first paint",
                "const p = performance.getEntriesByType('paint').find(e => e.name === 'first-contentful-paint'); return p ? p.startTime : null",
            )
            .await
            .as_f64()
            .expect("a time");
            paints.push(paint);
            until(&c, "the pack list", loaded).await;
        }
        paints.sort_by(f64::total_cmp);
        // The time itself is reported, not asserted (a wall-clock bound
        // fails on a loaded machine: 448–492 ms were seen beside four
        // builds, 40–384 ms otherwise). What keeps the paint fast is
        // asserted instead: the files fetched before it are the page's own
        // (no font, framework or other download), at most 256 KiB of them
        // (the API calls the page starts meanwhile do not hold the paint).
        eprintln!("first contentful paint (ms): {paints:?}");
        let before = c
            .execute(
                "const p = performance.getEntriesByType('paint').find(e => e.name === 'first-contentful-paint'); \
                 const nav = performance.getEntriesByType('navigation')[0]; \
                 return [[new URL(nav.name).pathname, nav.decodedBodySize]].concat(performance.getEntriesByType('resource') \
                   .filter(e => e.startTime < p.startTime) \
                   .map(e => [new URL(e.name).pathname, e.decodedBodySize]))",
                vec![],
            )
            .await
            .expect("script runs");
        eprintln!("fetched before the first paint: {before}");
        let before = before.as_array().expect("a list").clone();
        assert!(before.len() >= 2, "the page and its files: {before:?}");
        let own = ["/", "/web/style.css", "/web/app.js", "/web/api.js", "/web/dom.js", "/web/icon.svg"];
        let mut bytes = 0;
        for e in &before {
            let path = e[0].as_str().expect("a path");
            if path.starts_with("/api/") {
                continue;
            }
            assert!(own.contains(&path), "{path} fetched before the first paint: {before:?}");
            bytes += e[1].as_u64().expect("a size");
        }
        assert!(bytes <= 256 * 1024, "{bytes} bytes before the first paint: {before:?}");
        // The golden fixture's settings: seed 42, standard difficulty.
        let seed = c.find(Locator::Id("seed")).await.expect("#seed");
        seed.clear().await.expect("cleared");
        seed.send_keys("42").await.expect("typed");
        c.find(Locator::Id("start")).await.expect("#start").click().await.expect("Start");
        let mut at = settled(&c, Some("m1")).await;
        // The lines offered are the alphabet `troupe explore --json` prints,
        // in its order; a click puts one in the line field.
        let offered = until(
            &c,
            "the explore lines",
            "const b = [...document.querySelectorAll('#suggest button.line-pick')]; return b.length && b.map(x => x.textContent)",
        )
        .await;
        let out = Command::new(BIN)
            .arg("explore")
            .arg(&pack)
            .args(["--states", "1", "--depth", "1", "--json"])
            .output()
            .expect("troupe explore");
        let explored: Value = serde_json::from_slice(&out.stdout).expect("explore JSON");
        let alphabet: Vec<Value> = explored["alphabet"]["lines"]
            .as_array()
            .expect("lines")
            .iter()
            .map(|l| l["text"].clone())
            .collect();
        assert_eq!(offered, Value::Array(alphabet));
        c.find(Locator::Css("#suggest button.line-pick"))
            .await
            .expect("a line")
            .click()
            .await
            .expect("clicked");
        let picked = c
            .execute("return document.getElementById('line').value", vec![])
            .await
            .expect("script");
        assert_eq!(picked, offered[0]);
        c.find(Locator::Id("line")).await.expect("#line").clear().await.expect("cleared");
        let inputs = [
            "Good afternoon! It's a lovely car.",
            "You clearly have a good eye for stock, and the paintwork is beautiful.",
            "Could I see the service book? Similar hatchbacks are listed for less.",
            "I can offer 8,500 today, paid in full.",
            "Let's shake on it and sign the paperwork.",
        ];
        let session_file = tmp.path().join("session.jsonl");
        let mut checked = vec![at.clone()];
        for (i, line) in inputs.iter().enumerate() {
            if i == 2 {
                // Undo the second turn, say something else (a branch),
                // then go back to the second turn's answer and go on.
                let kept = at.clone();
                c.find(Locator::Id("undo")).await.expect("#undo").click().await.expect("Undo");
                let back = until(&c, "the undo", &format!("return document.body.dataset.busy === '0' && document.body.dataset.current !== {at:?} && document.body.dataset.current")).await;
                settled(&c, back.as_str()).await;
                let branch = say(&c, "Is the price negotiable at all?").await;
                checked.push(branch.clone());
                let branches = until(&c, "a branch in the tree", "return document.querySelectorAll('#tree ul.branch:not(.root)').length").await;
                assert_eq!(branches, json!(2), "two branches from the undone turn's parent");
                for id in [&kept, &branch] {
                    let n = c
                        .execute(&format!("return document.querySelectorAll('#tree [data-id={id:?}]').length"), vec![])
                        .await
                        .expect("script");
                    assert_eq!(n, json!(1), "{id} in the tree");
                }
                c.find(Locator::Css(&format!("#tree [data-id={kept:?}] button.goto")))
                    .await
                    .expect("Go here")
                    .click()
                    .await
                    .expect("Go here clicked");
                settled(&c, Some(&kept)).await;
            }
            at = say(&c, line).await;
            checked.push(at.clone());
        }
        // The ending and the score.
        let ending = c.find(Locator::Id("ending")).await.expect("#ending").text().await.expect("text");
        assert!(ending.contains("The story ended: success"), "{ending}");
        // No turn after an ending (Format 18): the lines explore would try,
        // shown before (above), are hidden with the line field disabled.
        let offered = c
            .execute("const s = document.getElementById('suggest'); return [s.hidden, s.offsetParent === null, document.getElementById('line').disabled]", vec![])
            .await
            .expect("script");
        assert_eq!(offered, json!([true, true, true]), "lines offered after the ending");
        // The rubric score as the API answers it (Format 19.6).
        let sid = session_id(&c).await;
        let score: Value =
            serde_json::from_str(&http_get(&format!("{api}/sessions/{sid}/score"), &token))
                .expect("score JSON");
        let criteria: Vec<String> = score["criteria"]
            .as_object()
            .expect("criteria")
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let expected = format!("Score: total {} ({}).", score["total"], criteria.join(", "));
        assert!(ending.contains(&expected), "{ending} lacks {expected}");
        c.execute(
            "document.getElementById('ending').scrollIntoView({block: 'center'})",
            vec![],
        )
        .await
        .expect("scrolled");
        shot(&c, "play.png").await;
        // The state the page shows at each message equals `troupe state
        // --json` of the session file there.
        let exported = http_get(&format!("{api}/sessions/{}.jsonl", session_id(&c).await), &token);
        std::fs::write(&session_file, &exported).expect("session file");
        for id in &checked {
            c.execute(&format!("document.querySelector('#tree [data-id={id:?}] button.pick').click()"), vec![])
                .await
                .expect("select");
            until(&c, "the inspect view", &format!("return document.getElementById('inspect').dataset.loaded === {id:?}")).await;
            assert_eq!(shown_state(&c).await, cli_state(&pack, &session_file, id), "state at {id}");
        }
        // Inspect view of the last message.
        c.find(Locator::Css(&format!("#tree [data-id={at:?}] button.pick"))).await.expect("pick").click().await.expect("pick");
        until(&c, "inspect", &format!("return document.getElementById('inspect').dataset.loaded === {at:?}")).await;
        c.find(Locator::Id("tab-inspect")).await.expect("tab").click().await.expect("tab");
        // The prompt shown is the API's prompt route's answer there (`troupe
        // prompt --json`, Format 24.3), the turn order's responder.
        let sid = session_id(&c).await;
        let api_prompt: Value = serde_json::from_str(&http_get(&format!("{api}/sessions/{sid}/prompt?at={at}"), &token)).expect("prompt JSON");
        assert_eq!(shown_json(&c, "prompt-json").await, api_prompt, "the prompt at {at}");
        shot(&c, "inspect.png").await;
        // The graph marks what fired on the path: the events and outcome of
        // the golden fixture.
        c.find(Locator::Id("tab-graph")).await.expect("tab").click().await.expect("tab");
        let fired = until(&c, "the graph", &format!("return document.getElementById('graph').dataset.loaded === {at:?} && [...document.querySelectorAll('#graph-box g.node.fired title')].map(t => t.textContent).sort()")).await;
        assert_eq!(fired, json!(["event counter_offer", "event dealer_warms_up", "outcome success"]));
        let current_rule = c.execute("return [...document.querySelectorAll('#graph-box g.node.current title')].map(t => t.textContent)", vec![]).await.expect("script");
        assert_eq!(current_rule, json!(["rule close_deal"]));
        shot(&c, "graph.png").await;
        c.execute(
            "document.getElementById('plot-box').scrollIntoView()",
            vec![],
        )
        .await
        .expect("scrolled");
        let lines = c
            .execute(
                "return document.querySelectorAll('#plot-box svg').length",
                vec![],
            )
            .await
            .expect("script");
        assert_eq!(lines, json!(1), "the plot is shown");
        shot(&c, "plot.png").await;
        // The download equals the API's export, byte for byte.
        c.find(Locator::Id("tab-play")).await.expect("tab").click().await.expect("tab");
        c.find(Locator::Id("download")).await.expect("#download").click().await.expect("Download");
        let file = downloads.join(format!("{}.jsonl", session_id(&c).await));
        let started = Instant::now();
        while !file.is_file() {
            assert!(started.elapsed() < Duration::from_secs(20), "no download at {}", file.display());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(std::fs::read_to_string(&file).expect("download"), exported);
        // The pictures download as the API draws them.
        c.find(Locator::Id("tab-graph")).await.expect("tab").click().await.expect("tab");
        let sid = session_id(&c).await;
        for (button, name, route) in [
            ("dl-graph", "used_car_negotiation-graph.svg".to_string(), "graph.svg".to_string()),
            ("dl-plot", format!("{sid}-plot.svg"), format!("plot.svg?at={at}")),
        ] {
            c.find(Locator::Id(button)).await.expect("button").click().await.expect("clicked");
            let file = downloads.join(&name);
            let started = Instant::now();
            while !file.is_file() {
                assert!(started.elapsed() < Duration::from_secs(20), "no download at {}", file.display());
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
            let api_svg = http_get(&format!("{api}/sessions/{sid}/{route}"), &token);
            assert_eq!(std::fs::read_to_string(&file).expect("download"), api_svg, "{name}");
        }
        c.find(Locator::Id("tab-play")).await.expect("tab").click().await.expect("tab");
        // Nothing but 127.0.0.1 was asked for.
        let origins = c.execute("return performance.getEntriesByType('resource').map(e => e.name).filter(n => !n.startsWith('http://127.0.0.1:') && !n.startsWith('blob:'))", vec![]).await.expect("script");
        assert_eq!(origins, json!([]));
        // No view scrolls sideways at 1280 × 800, nor at a phone's 390 px.
        assert_eq!(too_wide(&c, 1280).await, json!([]), "views wider than 1280 px");
        // Phone width.
        c.set_window_size(390, 844).await.expect("resize");
        assert_eq!(too_wide(&c, 400).await, json!([]), "views wider than the phone");
        c.execute("window.scrollTo(0, 0)", vec![])
            .await
            .expect("scrolled");
        shot(&c, "phone.png").await;
        let wide = c.execute("return document.documentElement.scrollWidth", vec![]).await.expect("script");
        assert!(wide.as_f64().unwrap_or(9999.0) <= 400.0, "the page is {wide} px wide at 390");
        // An undo of the ending turn goes back before the ending: the
        // lines to try are offered again, with the line field.
        c.find(Locator::Id("undo")).await.expect("#undo").click().await.expect("Undo");
        let back = until(&c, "the undo of the ending", &format!("return document.body.dataset.busy === '0' && document.body.dataset.current !== {at:?} && document.body.dataset.current")).await;
        settled(&c, back.as_str()).await;
        let offered = c
            .execute("const s = document.getElementById('suggest'); return [s.hidden, s.offsetParent === null, document.getElementById('line').disabled]", vec![])
            .await
            .expect("script");
        assert_eq!(offered, json!([false, false, false]), "lines offered after an undo of the ending");
        let sid = c.session_id().await.expect("id").expect("a session");
        let errors = console_errors(&driver, &sid);
        assert!(errors.is_empty(), "console errors: {errors:#?}");
        c.close().await.expect("closed");
    });
}

async fn session_id(c: &Client) -> String {
    let v = c
        .execute(
            "return document.getElementById('session-line').textContent.split(' ')[1]",
            vec![],
        )
        .await
        .expect("script");
    v.as_str().expect("a session ID").to_string()
}

/// The hostile text every name below carries: markup that would run
/// script if it were parsed (`<script>`, an `onerror` handler, a stray
/// `</svg>`), both quotes, and control characters.
const HOSTILE: &str = "<script>window.pwned=1</script></svg><img src=x onerror=\"window.pwned=2\"> \"q\" 's \u{7}\u{1b}[31m";

/// A copy of everyday-negotiation whose character's name, scenario title,
/// opening line and scene location carry [`HOSTILE`].
fn hostile_pack(dir: &Path) -> PathBuf {
    let src = Path::new(ROOT).join("examples/packs/everyday-negotiation");
    let dst = dir.join("hostile");
    for entry in walk(&src) {
        let rel = entry.strip_prefix(&src).expect("inside");
        let to = dst.join(rel);
        std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        std::fs::copy(&entry, &to).expect("copy");
    }
    let q = |s: &str| serde_json::to_string(s).expect("a JSON string");
    let edit = |file: &str, from: &str, to: &str| {
        let p = dst.join(file);
        let text = std::fs::read_to_string(&p).expect("read");
        assert!(text.contains(from), "{file} has {from}");
        std::fs::write(&p, text.replacen(from, to, 1)).expect("write");
    };
    edit(
        "npcs/marco_dealer.yaml",
        "nickname: Marco\n",
        &format!("nickname: {}\n", q(&format!("Marco {HOSTILE}"))),
    );
    edit(
        "scenarios/used_car_negotiation.yaml",
        "title: Negotiating a used car\n",
        &format!("title: {}\n", q(&format!("Car {HOSTILE}"))),
    );
    edit(
        "scenarios/used_car_negotiation.yaml",
        "  npc_says: >-\n    Afternoon!",
        "  npc_says: >-\n    </svg><script>window.pwned=3</script> \"Afternoon\"!",
    );
    // Lore (Format 5): a world whose entry's keys and content carry the
    // hostile text; the entry's plain key `there` activates it from the
    // typed line.
    std::fs::create_dir_all(dst.join("worlds")).expect("worlds");
    std::fs::write(
        dst.join("worlds/hostile.yaml"),
        format!(
            "schema_version: \"0.1\"\nworld_id: hostile\nname: {}\nentries:\n  - id: hostile_entry\n    keys:\n      - there\n      - {}\n    content: {}\n",
            q(&format!("World {HOSTILE}")),
            q(&format!("key {HOSTILE}")),
            q(&format!("Lore </svg><script>window.pwned=5</script> {HOSTILE}")),
        ),
    )
    .expect("a world");
    edit(
        "scenarios/used_car_negotiation.yaml",
        "\nscene:",
        "\nworlds:\n  - ref: worlds/hostile.yaml\nscene:",
    );
    edit(
        "scenes/dealership_lot.yaml",
        "location: Sunrise Motors, the front lot, late on a Saturday afternoon",
        &format!("location: {}", q(&format!("Lot {HOSTILE}"))),
    );
    dst
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("read_dir") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// A pack whose names, opening, location and a player's line hold
/// `<script>`, `</svg>`, quotes and control characters: the page shows
/// them as text, runs none of it, and logs no error (a CSP violation
/// would be one).
#[test]
fn hostile_strings_are_shown_as_text_and_run_nothing() {
    let Some((chromium, driver_bin)) = browser() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("a temp dir");
    let pack = hostile_pack(tmp.path());
    let (_server, url) = play_web(&pack);
    let (_driver, driver) = chromedriver(&driver_bin);
    runtime().block_on(async {
        let c = connect(&chromium, &driver, &tmp.path().join("profile"), tmp.path()).await;
        c.goto(&url).await.expect("the page loads");
        until(&c, "the pack list", "return document.getElementById('scenario').value === 'used_car_negotiation'").await;
        c.find(Locator::Id("start")).await.expect("#start").click().await.expect("Start");
        settled(&c, Some("m1")).await;
        say(&c, "<img src=x onerror=\"window.pwned=4\"></svg> \"hi\" 'there'").await;
        c.find(Locator::Id("tab-graph")).await.expect("tab").click().await.expect("tab");
        until(&c, "the graph", "return document.querySelectorAll('#graph-box svg g.node').length > 0 && document.querySelectorAll('#plot-box svg').length === 1").await;
        let v = c
            .execute(
                "return {pwned: window.pwned === undefined ? null : window.pwned,
                  scripts: document.querySelectorAll('script').length,
                  imgs: document.querySelectorAll('img').length,
                  author: document.querySelector('#transcript li[data-author=\"marco\"] .author').textContent,
                  opening: document.querySelector('#transcript li[data-id=\"m1\"] .part').textContent,
                  said: document.querySelector('#transcript li[data-author=\"player\"] .part').textContent,
                  title: document.getElementById('scenario').selectedOptions[0].textContent,
                  state: document.getElementById('state-now').textContent}",
                vec![],
            )
            .await
            .expect("script");
        assert_eq!(v["pwned"], Value::Null, "a hostile string ran: {v:#}");
        assert_eq!(v["scripts"], json!(1), "only the page's own module script: {v:#}");
        assert_eq!(v["imgs"], json!(0), "{v:#}");
        assert!(v["author"].as_str().unwrap_or("").contains("<script>window.pwned=1</script></svg>"), "{v:#}");
        assert!(v["opening"].as_str().unwrap_or("").starts_with("</svg><script>window.pwned=3</script> \"Afternoon\"!"), "{v:#}");
        assert!(v["said"].as_str().unwrap_or("").contains("<img src=x onerror=\"window.pwned=4\"></svg>"), "{v:#}");
        assert!(v["title"].as_str().unwrap_or("").contains("\"q\" 's"), "{v:#}");
        assert!(v["state"].as_str().unwrap_or("").contains("Lot <script>"), "{v:#}");
        // The lore entry the line (m2) activated, in Inspect's explain and
        // in the prompt answering it, shown as text (JSON text: its quotes
        // escaped).
        c.execute("document.querySelector('#tree [data-id=\"m2\"] button.pick').click()", vec![]).await.expect("m2 picked");
        let lore = until(
            &c,
            "Inspect at m2",
            "const i = document.getElementById('inspect'); return i.dataset.loaded === 'm2' && {explain: document.getElementById('explain-json').textContent, prompt: document.getElementById('prompt-json').textContent}",
        )
        .await;
        let explain = lore["explain"].as_str().unwrap_or("");
        let prompt = lore["prompt"].as_str().unwrap_or("");
        assert!(explain.contains("hostile_entry"), "{explain}");
        assert!(explain.contains("key <script>window.pwned=1</script></svg><img src=x onerror="), "the key: {explain}");
        assert!(
            format!("{explain}{prompt}").contains("Lore </svg><script>window.pwned=5</script>"),
            "the content: {explain}\n{prompt}"
        );
        c.find(Locator::Id("tab-inspect")).await.expect("tab").click().await.expect("tab");
        shot(&c, "hostile-lore.png").await;
        let pwned = c.execute("return window.pwned === undefined ? null : window.pwned", vec![]).await.expect("script");
        assert_eq!(pwned, Value::Null, "a hostile string ran");
        c.find(Locator::Id("tab-play"))
            .await
            .expect("tab")
            .click()
            .await
            .expect("tab");
        shot(&c, "hostile.png").await;
        assert_eq!(too_wide(&c, 1280).await, json!([]), "long hostile names widen no view");
        assert_eq!(off_host(&c).await, json!([]), "a request left 127.0.0.1");
        let sid = c.session_id().await.expect("id").expect("a session");
        let errors = console_errors(&driver, &sid);
        assert!(errors.is_empty(), "console errors: {errors:#?}");
        c.close().await.expect("closed");
    });
}

/// An ensemble (tenants-meeting): who is present is listed by name, a
/// click on a name addresses that character, who then answers (the turn's
/// `to`, Format 18.9: `chosen.why` is `host`), and each character's lines
/// are marked as theirs.
#[test]
fn a_click_on_a_name_addresses_that_character() {
    let Some((chromium, driver_bin)) = browser() else {
        return;
    };
    let pack = Path::new(ROOT).join("examples/packs/tenants-meeting");
    let (_server, url) = play_web(&pack);
    let (_driver, driver) = chromedriver(&driver_bin);
    let tmp = tempfile::tempdir().expect("a temp dir");
    runtime().block_on(async {
        let c = connect(&chromium, &driver, &tmp.path().join("profile"), tmp.path()).await;
        c.goto(&url).await.expect("the page loads");
        until(&c, "the pack list", "return document.getElementById('scenario').value === 'tenants_meeting'").await;
        c.find(Locator::Id("start")).await.expect("#start").click().await.expect("Start");
        let opening = settled(&c, None).await;
        let names = c
            .execute("return [...document.querySelectorAll('#present button.name')].map(b => b.textContent)", vec![])
            .await
            .expect("script");
        assert_eq!(names, json!(["Margit", "Dev", "Ruth"]), "present, in the scene's order");
        // Who speaks next under the turn order (Format 18.9), derived by
        // hand from the pack: `natural`, talkativeness Margit 50, Dev 30,
        // Ruth 20; the opening m1 is Margit's, so L = Margit and the
        // candidates are Dev and Ruth (W = 50). The input would be m2,
        // seed 0: r = choose(50, "speaker:0:m2") (18.3: FNV-1a 64 of the
        // label 0x3b0a055fae994169, SplitMix64's first next()
        // 0x509d2e77098d6b18, (v × 50) >> 64 = 15, computed with the
        // construction checked on 18.3's worked example), and 0 ≤ 15 < 30
        // gives Dev, `drawn` with draw 15.
        let (api, token) = api_of(&url);
        let sid = session_id(&c).await;
        let before = http_get(&format!("{api}/sessions/{sid}.jsonl"), &token);
        let next = |to: &str, text: &str| {
            format!("const e = document.getElementById('next'); return document.body.dataset.busy === '0' && !e.hidden && e.dataset.loaded === {:?} && [e.dataset.speaker, e.textContent]", format!("{to}|{text}"))
        };
        let shown = until(&c, "who speaks next", &next("", "")).await;
        assert_eq!(shown, json!(["dev", "Next to speak: Dev (drawn, draw 15)"]));
        let asked: Value = serde_json::from_str(&http_get(&format!("{api}/sessions/{sid}/next?text="), &token)).expect("next JSON");
        assert_eq!(asked, json!({"speaker": "dev", "input": "m2", "chosen": {"why": "drawn", "draw": 15}}));
        // A line naming Ruth (her nickname, the first of her names found at
        // that position) is hers: `addressed` by "Ruth".
        let line = "Ruth, what does the log say?";
        c.find(Locator::Id("line")).await.expect("#line").send_keys(line).await.expect("typed");
        let shown = until(&c, "who answers the line", &next("", line)).await;
        assert_eq!(shown, json!(["ruth", "Your line would be answered by Ruth (addressed, by “Ruth”)"]));
        c.execute("const l = document.getElementById('line'); l.value = ''; l.dispatchEvent(new Event('input'));", vec![]).await.expect("cleared");
        until(&c, "who speaks next again", &next("", "")).await;
        // Asking took no turn: the session file is as it was.
        assert_eq!(http_get(&format!("{api}/sessions/{sid}.jsonl"), &token), before, "asking wrote nothing");
        c.find(Locator::Css("#present button[aria-label='Address Ruth']"))
            .await
            .expect("Ruth's name")
            .click()
            .await
            .expect("clicked");
        let to = c.execute("return document.getElementById('to').value", vec![]).await.expect("script");
        assert_eq!(to, json!("ruth"));
        let shown = until(&c, "the host's choice", &next("ruth", "")).await;
        assert_eq!(shown, json!(["ruth", "Next to speak: Ruth (host)"]));
        let reply = say(&c, "May I see the logbook?").await;
        assert_ne!(reply, opening);
        let v = c
            .execute(
                &format!("const li = document.querySelector('#transcript li[data-id={reply:?}]'); return {{author: li.dataset.author, class: li.className, chips: [...li.querySelectorAll('.chip')].map(c => c.textContent), opener: document.querySelector('#transcript li').className}}"),
                vec![],
            )
            .await
            .expect("script");
        assert_eq!(v["author"], json!("ruth"), "{v:#}");
        assert!(v["chips"].as_array().expect("chips").contains(&json!("Ruth spoke (host)")), "{v:#}");
        assert_ne!(v["class"], v["opener"], "Ruth's lines and the opener's are marked apart: {v:#}");
        shot(&c, "ensemble.png").await;
        // The speaker foretold for a line naming no one is the one who
        // answers it.
        c.execute("const s = document.getElementById('to'); s.value = ''; s.dispatchEvent(new Event('change'));", vec![]).await.expect("to whoever");
        let plain = "We need the heating back.";
        c.find(Locator::Id("line")).await.expect("#line").send_keys(plain).await.expect("typed");
        let foretold = until(&c, "who answers the plain line", &next("", plain)).await;
        c.find(Locator::Id("line")).await.expect("#line").clear().await.expect("cleared");
        let answer = say(&c, plain).await;
        let first = c
            .execute(&format!("const li = [...document.querySelectorAll('#transcript li')]; const i = li.findIndex(x => x.querySelector('.part') && x.querySelector('.part').textContent === {plain:?}); return li[i + 1].dataset.author"), vec![])
            .await
            .expect("script");
        assert_eq!(first, foretold[0], "foretold {foretold}, answered by {first} (up to {answer})");
        // Inspect shows the prompt the model runtime would send to answer
        // Ruth's line: by the turn order's choice, then by the character
        // chosen in the list (Dev); each equals the API's prompt route.
        c.find(Locator::Css(&format!("#tree [data-id={reply:?}] button.pick"))).await.expect("pick").click().await.expect("pick");
        until(&c, "inspect", &format!("return document.getElementById('inspect').dataset.loaded === {reply:?}")).await;
        c.find(Locator::Id("tab-inspect")).await.expect("tab").click().await.expect("tab");
        let default: Value = serde_json::from_str(&http_get(&format!("{api}/sessions/{sid}/prompt?at={reply}"), &token)).expect("prompt JSON");
        assert_eq!(shown_json(&c, "prompt-json").await, default, "the turn order's prompt");
        let choices = c.execute("return [...document.getElementById('prompt-char').options].map(o => o.value)", vec![]).await.expect("script");
        assert_eq!(choices, json!(["", "margit", "dev", "ruth", "narrator"]));
        c.execute("const s = document.getElementById('prompt-char'); s.value = 'dev'; s.dispatchEvent(new Event('change'));", vec![]).await.expect("choose Dev");
        until(&c, "Dev's prompt", "return document.body.dataset.busy === '0' && document.getElementById('prompt-json').dataset.char === 'dev'").await;
        let dev: Value = serde_json::from_str(&http_get(&format!("{api}/sessions/{sid}/prompt?at={reply}&char=dev"), &token)).expect("prompt JSON");
        let system = dev["messages"][0]["content"].as_str().unwrap_or("");
        assert!(system.starts_with("You are Dev."), "{system}");
        assert_eq!(shown_json(&c, "prompt-json").await, dev, "Dev's prompt");
        shot(&c, "prompt.png").await;
        assert_eq!(off_host(&c).await, json!([]), "a request left 127.0.0.1");
        c.find(Locator::Id("tab-play")).await.expect("tab").click().await.expect("tab");
        // Every control has a name a screen reader reads (a label, an
        // aria-label or its text), and each is reachable with Tab.
        assert_eq!(unnamed(&c).await, json!([]), "controls without a name");
        let untabbable = c
            .execute(
                "return [...document.querySelectorAll('input, select, button, textarea')].filter(e => e.tabIndex < 0).map(e => e.outerHTML)",
                vec![],
            )
            .await
            .expect("script");
        assert_eq!(untabbable, json!([]), "controls out of the Tab order");
        // A line typed with the keyboard alone: focus moves by Tab from the
        // line field to the Say button, Enter presses it.
        let line = c.find(Locator::Id("line")).await.expect("#line");
        line.send_keys("Ruth, thank you.").await.expect("typed");
        line.send_keys("\u{E004}").await.expect("Tab");
        let focused = c
            .execute("return document.activeElement.id", vec![])
            .await
            .expect("script");
        assert_eq!(focused, json!("to"), "Tab goes from the line to the To list");
        c.execute("document.activeElement.blur()", vec![]).await.expect("blur");
        let sid = c.session_id().await.expect("id").expect("a session");
        let errors = console_errors(&driver, &sid);
        assert!(errors.is_empty(), "console errors: {errors:#?}");
        // A server error is shown as its plain message and code: a wrong
        // token (the browser logs the refused requests, and nothing else:
        // on a loaded machine the field's clearing can send one more
        // refused request before the typed token is read).
        let token = c.find(Locator::Id("token")).await.expect("#token");
        token.clear().await.expect("cleared");
        token.send_keys("trp_wrong\u{E007}").await.expect("typed");
        let problem = until(&c, "the problem line", "const p = document.getElementById('problem'); return !p.hidden && p.textContent").await;
        let problem = problem.as_str().unwrap_or("");
        assert!(problem.contains("UNAUTHORIZED, HTTP 401"), "{problem}");
        let errors = console_errors(&driver, &sid);
        assert!(
            errors.iter().any(|e| e.contains("/packs - Failed to load resource: the server responded with a status of 401"))
                && errors.iter().all(|e| e.contains("Failed to load resource: the server responded with a status of 401")),
            "console errors: {errors:#?}"
        );
        c.close().await.expect("closed");
    });
}

/// A reload keeps the session (docs/web.md "Start"): after a turn and a
/// "Go here" back to the opening, reloading the tab shows the same workspace,
/// pack, session and current message, from the URL fragment (which holds
/// no token) and sessionStorage; a line typed then goes on from there.
#[test]
fn a_reload_keeps_the_session() {
    let Some((chromium, driver_bin)) = browser() else {
        return;
    };
    let pack = Path::new(ROOT).join("examples/packs/everyday-negotiation");
    let (_server, url) = play_web(&pack);
    let (api, token) = api_of(&url);
    let (_driver, driver) = chromedriver(&driver_bin);
    let tmp = tempfile::tempdir().expect("a temp dir");
    runtime().block_on(async {
        let c = connect(&chromium, &driver, &tmp.path().join("profile"), tmp.path()).await;
        c.goto(&url).await.expect("the page loads");
        until(&c, "the pack list", "return document.getElementById('scenario').value === 'used_car_negotiation'").await;
        c.find(Locator::Id("start")).await.expect("#start").click().await.expect("Start");
        settled(&c, Some("m1")).await;
        let at = say(&c, "Good afternoon! It's a lovely car.").await;
        // Go back to the opening: the current message is no longer the last.
        c.find(Locator::Css("#tree [data-id='m1'] button.goto")).await.expect("Go here").click().await.expect("clicked");
        settled(&c, Some("m1")).await;
        let sid = session_id(&c).await;
        let pack_hash = c.execute("return document.getElementById('pack').value", vec![]).await.expect("script");
        let page = c.current_url().await.expect("url").to_string();
        assert!(!page.contains("token"), "{page}");
        assert!(page.ends_with(&format!("#ws=play&pack={}&session={sid}", pack_hash.as_str().unwrap_or(""))), "{page}");
        c.refresh().await.expect("reloaded");
        let current = settled(&c, Some("m1")).await;
        assert_eq!(current, "m1");
        let v = c
            .execute(
                "return {ws: document.getElementById('ws').value, pack: document.getElementById('pack').value, line: document.getElementById('session-line').textContent, tree: [...document.querySelectorAll('#tree [data-id]')].map(n => n.dataset.id)}",
                vec![],
            )
            .await
            .expect("script");
        assert_eq!(v["ws"], json!("play"));
        assert_eq!(v["pack"], pack_hash);
        assert!(v["line"].as_str().unwrap_or("").starts_with(&format!("Session {sid} ")), "{v:#}");
        assert_eq!(v["tree"], json!(["m1", "m2", at]), "{v:#}");
        // The next line branches from the restored current message.
        let branch = say(&c, "Is the price negotiable at all?").await;
        let file = http_get(&format!("{api}/sessions/{sid}.jsonl"), &token);
        let line: Value = file
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|l| l["parts"][0]["text"] == "Is the price negotiable at all?")
            .expect("the branch's input");
        assert_eq!(line["parent"], json!("m1"), "the line after the reload answers m1 (then {branch})");
        assert_eq!(off_host(&c).await, json!([]), "a request left 127.0.0.1");
        let wd = c.session_id().await.expect("id").expect("a session");
        let errors = console_errors(&driver, &wd);
        assert!(errors.is_empty(), "console errors: {errors:#?}");
        // A session that is gone: its problem is shown, and it is forgotten.
        let gone = page.replace(&sid, "s000000000000000000000000");
        c.goto(&gone).await.expect("navigated");
        c.refresh().await.expect("reloaded");
        let problem = until(&c, "the problem line", "const p = document.getElementById('problem'); return !p.hidden && document.body.dataset.busy === '0' && p.textContent").await;
        assert!(problem.as_str().unwrap_or("").contains("NOT_FOUND, HTTP 404"), "{problem}");
        let now = c.current_url().await.expect("url").to_string();
        assert!(!now.contains("session="), "{now}");
        c.close().await.expect("closed");
    });
}

/// The files of directory `dir` as a zip, paths relative to it.
fn zip_dir(dir: &Path) -> Vec<u8> {
    use std::io::Write;
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let mut files = walk(dir);
    files.sort();
    for f in files {
        let rel = f
            .strip_prefix(dir)
            .expect("inside")
            .to_string_lossy()
            .replace('\\', "/");
        zip.start_file(rel, zip::write::SimpleFileOptions::default())
            .expect("zip entry");
        zip.write_all(&std::fs::read(&f).expect("read"))
            .expect("zip write");
    }
    zip.finish().expect("zip").into_inner()
}

/// The Tests view runs a pack's tests on the server (`packs:test`) from a
/// zip chosen in the page and shows the report: a copy of the negotiation
/// pack whose static assertion expects threshold 75 where the event says
/// 70 fails that one test, with the assertion's message (the same edit
/// `tests/server_api.rs` makes for `test --server`).
#[test]
fn the_tests_view_shows_a_failing_report() {
    let Some((chromium, driver_bin)) = browser() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("a temp dir");
    let pack = Path::new(ROOT).join("examples/packs/everyday-negotiation");
    let copy = tmp.path().join("negotiation");
    for f in walk(&pack) {
        let to = copy.join(f.strip_prefix(&pack).expect("inside"));
        std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        std::fs::copy(&f, &to).expect("copy");
    }
    let fixture = copy.join("tests/golden_used_car_negotiation.yaml");
    let text = std::fs::read_to_string(&fixture).expect("fixture");
    let from = "variable=impression AND threshold=70";
    assert!(text.contains(from));
    std::fs::write(
        &fixture,
        text.replace(from, "variable=impression AND threshold=75"),
    )
    .expect("edit");
    // And a fixture whose first turn expects impression 63 where its own
    // hand derivation (its description: 50 + 12 for the compliment) gives
    // 62: it fails at turn 1, and its run has a transcript.
    let deal = copy.join("tests/golden_rules_deal.yaml");
    let text = std::fs::read_to_string(&deal).expect("fixture");
    let from = "state: {impression: 62, deal_progress: 0}";
    assert!(text.contains(from));
    std::fs::write(
        &deal,
        text.replace(from, "state: {impression: 63, deal_progress: 0}"),
    )
    .expect("edit");
    let zip = tmp.path().join("negotiation.zip");
    std::fs::write(&zip, zip_dir(&copy)).expect("zip");
    let (_server, url) = play_web(&pack);
    let (_driver, driver) = chromedriver(&driver_bin);
    runtime().block_on(async {
        let c = connect(&chromium, &driver, &tmp.path().join("profile"), tmp.path()).await;
        c.goto(&url).await.expect("the page loads");
        until(&c, "the pack list", "return document.getElementById('scenario').value === 'used_car_negotiation'").await;
        c.find(Locator::Id("tab-tests")).await.expect("tab").click().await.expect("tab");
        c.find(Locator::Id("test-zip"))
            .await
            .expect("#test-zip")
            .send_keys(&zip.display().to_string())
            .await
            .expect("chosen");
        c.find(Locator::Id("run-tests")).await.expect("button").click().await.expect("Run");
        let status = until(&c, "the report", "return document.getElementById('tests').dataset.loaded").await;
        assert_eq!(status, json!("FAIL"));
        let failed = c
            .execute("return [...document.querySelectorAll('li.test.fail')].map(li => [li.dataset.name, li.textContent])", vec![])
            .await
            .expect("script");
        let failed = failed.as_array().expect("a list");
        assert_eq!(failed.len(), 2, "{failed:#?}");
        assert_eq!(failed[0][0], json!("Marco warms up once the buyer has made a good impression"));
        let shown = failed[0][1].as_str().unwrap_or("");
        assert!(
            shown.contains("expected 75, found the number 70 (tests/golden_used_car_negotiation.yaml:59)"),
            "{shown}"
        );
        let summary = c.find(Locator::Id("test-summary")).await.expect("summary").text().await.expect("text");
        assert_eq!(summary, "negotiation: FAIL (exit code 1)");
        // Each failure links to the transcript of its file's fixture: the
        // fixture's own run of its five inputs as `troupe run` prints it,
        // and for the static assertion (no session of its own) the run of
        // the fixture it is written in.
        assert_eq!(failed[1][0], json!("golden_rules_deal"));
        let shown = failed[1][1].as_str().unwrap_or("");
        assert!(shown.contains("turn 1: state.impression expected 63, got 62 (tests/golden_rules_deal.yaml:18)"), "{shown}");
        let links = c.execute("return [...document.querySelectorAll('li.test.fail')].map(li => [...li.querySelectorAll('.failures button.to-transcript')].map(b => b.dataset.fixture))", vec![]).await.expect("script");
        assert_eq!(links, json!([["golden_used_car_negotiation"], ["golden_rules_deal"]]), "each failure links to its file's fixture");
        // From the keyboard: Enter on the focused link opens it.
        c.find(Locator::Css("li.test[data-name='golden_rules_deal'] button.to-transcript")).await.expect("the link").send_keys("\u{E007}").await.expect("Enter");
        let shown = until(&c, "the transcript", "const d = document.querySelector(\"li.test[data-name='golden_rules_deal'] details.transcript-of\"); return d.open && document.activeElement === d.querySelector('summary') && d.querySelector('pre').textContent").await;
        let shown = shown.as_str().unwrap_or("");
        for input in [
            "Good afternoon! It's a lovely car.",
            "You clearly have a good eye for stock, and the paintwork is beautiful.",
            "Could I see the service book? Similar hatchbacks are listed for less.",
            "I can offer 8,500 today, paid in full.",
            "Let's shake on it and sign the paperwork.",
        ] {
            assert!(shown.contains(input), "the transcript lacks {input:?}: {shown}");
        }
        assert!(shown.contains("impression"), "{shown}");
        c.find(Locator::Css("li.test.fail[data-name='Marco warms up once the buyer has made a good impression'] button.to-transcript")).await.expect("the link").click().await.expect("clicked");
        let shown = until(&c, "the fixture's transcript", "const d = document.querySelector(\"details.transcript-of[data-fixture='golden_used_car_negotiation']\"); return d.open && document.activeElement === d.querySelector('summary') && d.querySelector('pre').textContent").await;
        // Its first input, as the fixture file writes it (turn 1).
        let first = "Good afternoon! It's a lovely car. Before we talk numbers, could I see the service book and take it round the block?";
        assert!(std::fs::read_to_string(&fixture).expect("fixture").contains("Good afternoon! It's a lovely car. Before we talk numbers, could I see the\n      service book"));
        assert!(shown.as_str().unwrap_or("").contains(first), "{shown}");
        shot(&c, "tests.png").await;
        assert_eq!(too_wide(&c, 1280).await, json!([]), "the report widens no view");
        assert_eq!(unnamed(&c).await, json!([]), "controls without a name");
        assert_eq!(off_host(&c).await, json!([]), "a request left 127.0.0.1");
        let sid = c.session_id().await.expect("id").expect("a session");
        let errors = console_errors(&driver, &sid);
        assert!(errors.is_empty(), "console errors: {errors:#?}");
        c.close().await.expect("closed");
    });
}

/// A failing recorded session (Format 21.5) and a failing playtest (22.5)
/// link to their own run in the Tests view (issue 40 item 4). Derived by
/// hand, not from the page: the copy of the negotiation pack gets a
/// session recorded by `troupe run` under its own rules and its snapshot
/// accepted (`troupe test --accept`), then the recording's second reply is
/// edited to "Sold!". Re-played under the unchanged rules, the input "I
/// can offer 7,000 cash today." gets the reply it got when recorded (the
/// rules did not change): "… laughs. 'For that money you can have the
/// hubcaps.'", so the session fails and its transcript is the re-play's,
/// holding both inputs and that reply and not "Sold!". The playtest
/// `scripted_close` gets the goal `verify: "false"`, which never holds
/// (22.6), so it fails with `goal ana/deal not met`; its first step "What a
/// lovely car." has no `after` and is taken in round 1 (22.5 "Scenario"),
/// so its session's transcript (`scripted_close.jsonl`) holds it.
#[test]
fn a_failing_session_and_playtest_link_to_their_transcripts() {
    let Some((chromium, driver_bin)) = browser() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("a temp dir");
    let pack = Path::new(ROOT).join("examples/packs/everyday-negotiation");
    let copy = tmp.path().join("negotiation");
    for f in walk(&pack) {
        let to = copy.join(f.strip_prefix(&pack).expect("inside"));
        std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        std::fs::copy(&f, &to).expect("copy");
    }
    let script = tmp.path().join("lines.txt");
    std::fs::write(
        &script,
        "Good afternoon! It is a lovely car.\nI can offer 7,000 cash today.\n",
    )
    .expect("script");
    std::fs::create_dir_all(copy.join("sessions")).expect("mkdir");
    let recorded = copy.join("sessions/deal.jsonl");
    let ran = Command::new(BIN)
        .arg("run")
        .arg(&copy)
        .arg("--script")
        .arg(&script)
        .arg("--out")
        .arg(&recorded)
        .output()
        .expect("troupe run");
    assert!(ran.status.success(), "{ran:?}");
    let accepted = Command::new(BIN)
        .arg("test")
        .arg(&copy)
        .arg("--accept")
        .output()
        .expect("troupe test --accept");
    assert!(accepted.status.success(), "{accepted:?}");
    let text = std::fs::read_to_string(&recorded).expect("session");
    let reply = "'For that money you can have the hubcaps.'";
    assert_eq!(text.matches(reply).count(), 1, "{text}");
    std::fs::write(&recorded, text.replace(reply, "Sold!")).expect("edit");
    let playtest = copy.join("playtests/scripted_close.yaml");
    let text = std::fs::read_to_string(&playtest).expect("playtest");
    let goal = "verify: \"state.deal_progress >= 80\"";
    assert!(text.contains(goal));
    std::fs::write(&playtest, text.replace(goal, "verify: \"false\"")).expect("edit");
    let zip = tmp.path().join("negotiation.zip");
    std::fs::write(&zip, zip_dir(&copy)).expect("zip");
    let (_server, url) = play_web(&pack);
    let (_driver, driver) = chromedriver(&driver_bin);
    runtime().block_on(async {
        let c = connect(&chromium, &driver, &tmp.path().join("profile"), tmp.path()).await;
        c.goto(&url).await.expect("the page loads");
        until(&c, "the pack list", "return document.getElementById('scenario').value === 'used_car_negotiation'").await;
        c.find(Locator::Id("tab-tests")).await.expect("tab").click().await.expect("tab");
        c.find(Locator::Id("test-zip"))
            .await
            .expect("#test-zip")
            .send_keys(&zip.display().to_string())
            .await
            .expect("chosen");
        c.find(Locator::Id("run-tests")).await.expect("button").click().await.expect("Run");
        let status = until(&c, "the report", "return document.getElementById('tests').dataset.loaded").await;
        assert_eq!(status, json!("FAIL"));
        // Exactly the two broken tests fail, each failure linked to its own
        // test's run (stage and name).
        let links = c.execute("return [...document.querySelectorAll('li.test.fail')].map(li => [li.dataset.name, [...li.querySelectorAll('.failures button.to-transcript')].map(b => [b.dataset.stage, b.dataset.fixture])])", vec![]).await.expect("script");
        let links = links.as_array().expect("a list").clone();
        assert_eq!(links.len(), 2, "{links:#?}");
        assert_eq!(links[0][0], json!("deal.jsonl"));
        let session_links = links[0][1].as_array().expect("links");
        assert!(!session_links.is_empty(), "{links:#?}");
        assert!(session_links.iter().all(|l| l == &json!(["sessions", "deal.jsonl"])), "{links:#?}");
        assert_eq!(links[1], json!(["scripted_close", [["playtests", "scripted_close"]]]));
        let failed = c.execute("return document.querySelector(\"li.test.fail[data-name='scripted_close']\").textContent", vec![]).await.expect("script");
        assert!(failed.as_str().unwrap_or("").contains("goal ana/deal not met"), "{failed}");
        c.find(Locator::Css("li.test.fail[data-name='deal.jsonl'] button.to-transcript")).await.expect("the link").send_keys("\u{E007}").await.expect("Enter");
        let shown = until(&c, "the session's transcript", "const d = document.querySelector(\"details.transcript-of[data-stage='sessions'][data-fixture='deal.jsonl']\"); return d.open && document.activeElement === d.querySelector('summary') && d.querySelector('pre').textContent").await;
        let shown = shown.as_str().unwrap_or("");
        assert!(shown.starts_with("Re-played under the current rules:\n"), "{shown}");
        for line in ["Good afternoon! It is a lovely car.", "I can offer 7,000 cash today.", reply] {
            assert!(shown.contains(line), "the re-play lacks {line:?}: {shown}");
        }
        assert!(!shown.contains("Sold!"), "{shown}");
        c.find(Locator::Css("li.test.fail[data-name='scripted_close'] button.to-transcript")).await.expect("the link").click().await.expect("clicked");
        let shown = until(&c, "the playtest's transcript", "const d = document.querySelector(\"details.transcript-of[data-stage='playtests'][data-fixture='scripted_close']\"); return d.open && document.activeElement === d.querySelector('summary') && d.querySelector('pre').textContent").await;
        let shown = shown.as_str().unwrap_or("");
        assert!(shown.starts_with("scripted_close.jsonl:\n"), "{shown}");
        assert!(shown.contains("What a lovely car."), "{shown}");
        shot(&c, "tests-session-playtest.png").await;
        assert_eq!(unnamed(&c).await, json!([]), "controls without a name");
        assert_eq!(off_host(&c).await, json!([]), "a request left 127.0.0.1");
        let sid = c.session_id().await.expect("id").expect("a session");
        let errors = console_errors(&driver, &sid);
        assert!(errors.is_empty(), "console errors: {errors:#?}");
        c.close().await.expect("closed");
    });
}
