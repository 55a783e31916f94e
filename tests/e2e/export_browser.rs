//! The HTML handout in a real headless Chromium: the rendered DOM holds the tokens, the forced mark and
//! the step table; focusing a token shows its top-5 popup (CSS only); a screenshot and a PDF come out.
//! Without a browser the test is skipped, except under `CI=true`, where it fails and names the package.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const PACKAGE_HINT: &str = "apt-get install chromium";

/// The flags every headless run here uses (after `--headless`): no sandbox, no GPU, nothing fetched
/// from the network behind the test's back.
pub(crate) const HEADLESS_FLAGS: [&str; 7] = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
];

/// The browser: `NEXTTOKEN_BROWSER` when set (a path; nothing if no file is there), else the first of
/// the usual names on `PATH`.
fn browser() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NEXTTOKEN_BROWSER") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let names = ["chromium", "chromium-browser", "google-chrome"];
    let dirs =
        std::env::var_os("PATH").map_or_else(Vec::new, |p| std::env::split_paths(&p).collect());
    let found = names
        .iter()
        .flat_map(|n| dirs.iter().map(move |d| d.join(n)))
        .find(|p| p.is_file());
    found.or_else(|| Some(PathBuf::from("/usr/bin/chromium")).filter(|p| p.is_file()))
}

/// The browser, or `None` after saying why the test is skipped; under `CI=true` a missing browser
/// fails the test instead, naming the package.
pub(crate) fn browser_or_skip() -> Option<PathBuf> {
    let found = browser();
    if found.is_none() {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("no Chromium found (chromium, chromium-browser, google-chrome): CI needs it for this test; install it with `{PACKAGE_HINT}`");
        }
        eprintln!("skipped: no Chromium found; install it with `{PACKAGE_HINT}` to run this test");
    }
    found
}

/// Runs the browser headless on `page` with the extra `args`, in a fresh profile under `tmp`.
fn chromium(bin: &Path, tmp: &Path, args: &[String], page: &Path) -> Output {
    let profile = tempfile::tempdir_in(tmp).unwrap();
    let out = Command::new(bin)
        .arg("--headless")
        .args(HEADLESS_FLAGS)
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{} failed: {}",
        bin.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A PNG's width and height, from its header.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    (be(16), be(20))
}

#[test]
fn the_handout_renders_in_headless_chromium() {
    let Some(bin) = browser_or_skip() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/handout-session.json");
    let page = tmp.path().join("handout.html");
    let o = Command::new(env!("CARGO_BIN_EXE_nexttoken"))
        .arg("export")
        .arg(&fixture)
        .arg("-o")
        .arg(&page)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let saved = nexttoken::engine::session_file::read(&fixture).unwrap();
    let h = nexttoken::export::facts::Handout::new(&saved, "handout-session.json");

    the_dom_holds_every_step(&bin, tmp.path(), &page, &h);
    at_a_phones_width_commands_break_only_at_spaces(&bin, tmp.path(), &page);
    let probe = a_focused_token_shows_its_popup(&bin, tmp.path(), &page);
    a_screenshot_and_a_pdf_are_not_blank(&bin, tmp.path(), &page, &probe);
}

/// The DOM as Chromium parsed it: every step's token, each forced one marked once, one row per step.
fn the_dom_holds_every_step(
    bin: &Path,
    dir: &Path,
    page: &Path,
    h: &nexttoken::export::facts::Handout,
) {
    let dom = String::from_utf8(chromium(bin, dir, &["--dump-dom".into()], page).stdout).unwrap();
    for n in &h.steps {
        let q = nexttoken::fmt::quoted_token(&n.record.token);
        assert!(
            dom.contains(&nexttoken::export::html::escape(&q)),
            "{q} not in the DOM"
        );
    }
    let forced = h
        .steps
        .iter()
        .filter(|n| n.record.source == nexttoken::protocol::Source::Forced);
    let forced = forced.count();
    assert!(forced >= 1);
    // Each forced token of the text carries the forced class and the flag, and no other token does.
    assert_eq!(dom.matches(" forced\" tabindex=\"0\"").count(), forced);
    assert_eq!(
        dom.matches(" forced\" tabindex=\"0\" title=\"step ")
            .count(),
        forced
    );
    assert_eq!(
        dom.matches("<b class=\"flag\">⚑</b>").count(),
        1 + 2 * forced,
        "legend, text, table"
    );
    assert!(dom.contains("<table class=\"steps\">"));
    let rows = dom.matches("<td class=\"top\">").count();
    assert_eq!(rows, h.steps.len(), "one step row per generated token");
}

/// At 400 px (a phone) the commands wrap, but only at spaces: no word of them (`--seed`,
/// `smollm2-135m`) is split over two lines, where a reader typing from paper would copy the break.
/// The wide tables scroll inside themselves: the page does not scroll sideways.
fn at_a_phones_width_commands_break_only_at_spaces(bin: &Path, dir: &Path, page: &Path) {
    let probe = dir.join("narrow.html");
    let script = "<script>const ws=[...document.querySelectorAll('.command .w')];\
        document.body.dataset.words=ws.length;\
        document.body.dataset.split=ws.filter(w=>w.getClientRects().length>1).length;\
        document.body.dataset.sideways=document.documentElement.scrollWidth>window.innerWidth+1;</script></body>";
    let html = std::fs::read_to_string(page).unwrap();
    std::fs::write(&probe, html.replace("</body>", script)).unwrap();
    let args = ["--dump-dom".into(), "--window-size=400,2000".into()];
    let dom = String::from_utf8(chromium(bin, dir, &args, &probe).stdout).unwrap();
    let data = |k: &str| {
        let at = dom
            .find(&format!("data-{k}=\""))
            .unwrap_or_else(|| panic!("no {k}"))
            + k.len()
            + 7;
        dom[at..].split('"').next().unwrap().to_string()
    };
    assert!(
        data("words").parse::<usize>().unwrap() > 10,
        "the commands' words"
    );
    assert_eq!(data("split"), "0", "a command's word split over two lines");
    assert_eq!(
        data("sideways"),
        "false",
        "the page scrolls sideways at 400 px"
    );
}

/// Focus a token (as a tap or Tab would): its popup shows, the others stay hidden. Returns the probe
/// page (the handout with the focusing script).
fn a_focused_token_shows_its_popup(bin: &Path, dir: &Path, page: &Path) -> PathBuf {
    // A headless window does not always have focus when the page's script first runs (`:focus` then
    // matches nothing), so the probe retries on a timer until it does, and the virtual-time budget lets
    // those timers run before the DOM is dumped.
    let probe = dir.join("probe.html");
    let script = "<script>const f=document.querySelector('.tok.gen.forced');\
        const o=document.querySelector('.tok.gen:not(.forced)');\
        const d=e=>getComputedStyle(e.querySelector('.pop')).display;let tries=0;\
        function probe(){f.focus();if(!f.matches(':focus')&&tries++<100){setTimeout(probe,20);return;}\
        document.body.dataset.focused=d(f);document.body.dataset.other=d(o);}probe();</script></body>";
    let html = std::fs::read_to_string(page).unwrap();
    std::fs::write(&probe, html.replace("</body>", script)).unwrap();
    let dump = ["--dump-dom".into(), "--virtual-time-budget=5000".into()];
    let dom = String::from_utf8(chromium(bin, dir, &dump, &probe).stdout).unwrap();
    assert!(
        dom.contains("data-focused=\"block\""),
        "the focused token's popup is not shown"
    );
    assert!(
        dom.contains("data-other=\"none\""),
        "another token's popup is shown"
    );
    probe
}

/// A screenshot (with the forced token's popup open, from `probe`) and a PDF (the print stylesheet)
/// that are not blank pages.
fn a_screenshot_and_a_pdf_are_not_blank(bin: &Path, dir: &Path, page: &Path, probe: &Path) {
    let png = dir.join("handout.png");
    let shot = [
        format!("--screenshot={}", png.display()),
        "--window-size=1200,1600".into(),
        "--virtual-time-budget=5000".into(),
    ];
    chromium(bin, dir, &shot, probe);
    let bytes = std::fs::read(&png).expect("the screenshot was written");
    assert_eq!(png_size(&bytes), (1200, 1600));
    assert!(
        bytes.len() > 20_000,
        "the screenshot is nearly empty ({} bytes)",
        bytes.len()
    );
    let pdf = dir.join("handout.pdf");
    chromium(
        bin,
        dir,
        &[
            format!("--print-to-pdf={}", pdf.display()),
            "--no-pdf-header-footer".into(),
        ],
        page,
    );
    let pdf = std::fs::read(&pdf).expect("the PDF was written");
    assert!(pdf.starts_with(b"%PDF") && pdf.len() > 10_000);
    if std::env::var_os("NEXTTOKEN_UPDATE_DOCS_IMAGE").is_some() {
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/images/handout.png");
        std::fs::create_dir_all(docs.parent().unwrap()).unwrap();
        std::fs::write(&docs, &bytes).unwrap();
    }
}
