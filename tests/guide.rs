//! The user guide (`docs/src/`) and README stay true: every relative link
//! and `#anchor` resolves, and no code block is left without a language
//! (rustdoc would take it for Rust). The guide's Rust blocks run as doc
//! tests of the `oneside` crate (`src/lib.rs`, `mod guide`); its C blocks
//! are compiled by `tests/capi.rs`.

mod common;

use common::{guide_pages as pages, repo_file};
use std::collections::BTreeSet;
use std::path::Path;

/// The text outside fenced code blocks, with inline code removed.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            let kept: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
            out.push_str(&kept);
            out.push('\n');
        }
    }
    out
}

/// mdBook's (and GitHub's) id of a heading: lower case, spaces to `-`,
/// only letters, digits, `-` and `_` kept.
fn heading_id(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors a page defines, duplicates numbered as mdBook does.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for line in headings(text) {
        let id = heading_id(&line);
        let mut unique = id.clone();
        let mut n = 1;
        while seen.contains(&unique) {
            unique = format!("{id}-{n}");
            n += 1;
        }
        seen.insert(unique);
    }
    seen
}

/// The headings of a page, outside code blocks, without their `#`s and
/// inline code markers.
fn headings(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut headings = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            headings.push(line.trim_start_matches('#').replace('`', ""));
        }
    }
    headings
}

/// Every `](target)` of a page's prose.
fn links(text: &str) -> Vec<String> {
    let prose = prose(text);
    let mut found = Vec::new();
    let mut rest = prose.as_str();
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        if let Some(end) = rest.find(')') {
            found.push(rest[..end].trim().to_string());
        }
    }
    found
}

fn broken_links(page: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(page).unwrap();
    let mut broken = Vec::new();
    for link in links(&text) {
        if link.contains("://") || link.starts_with("mailto:") {
            continue;
        }
        let (file, anchor) = match link.split_once('#') {
            Some((file, anchor)) => (file, Some(anchor)),
            None => (link.as_str(), None),
        };
        let target = if file.is_empty() {
            page.to_path_buf()
        } else {
            page.parent().unwrap().join(file)
        };
        if !target.exists() {
            broken.push(format!("{link}: no file {}", target.display()));
            continue;
        }
        if let Some(anchor) = anchor {
            let target_text = std::fs::read_to_string(&target).unwrap_or_default();
            if !anchors(&target_text).contains(anchor) {
                broken.push(format!("{link}: no heading with id '{anchor}' in {}", target.display()));
            }
        }
    }
    broken
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let mut broken = Vec::new();
    for page in pages() {
        for why in broken_links(&page) {
            broken.push(format!("{}: {why}", page.display()));
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_chapter_is_in_the_summary_and_every_code_block_names_its_language() {
    let summary = std::fs::read_to_string(repo_file("docs/src/SUMMARY.md")).unwrap();
    for page in pages() {
        let name = page.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&page).unwrap();
        if name != "SUMMARY.md" && name != "README.md" {
            assert!(summary.contains(&format!("({name})")), "{name} is not in SUMMARY.md");
        }
        let mut fenced = false;
        for (n, line) in text.lines().enumerate() {
            if let Some(info) = line.trim_start().strip_prefix("```") {
                if !fenced {
                    assert!(
                        !info.trim().is_empty(),
                        "{name}:{}: a code block without a language",
                        n + 1
                    );
                }
                fenced = !fenced;
            }
        }
    }
}

#[test]
fn the_readme_fits_its_budget_and_keeps_the_two_commands() {
    let readme = std::fs::read_to_string(repo_file("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines <= 200, "README.md has {lines} lines, the budget is 200");
    assert!(readme.contains("cargo test --workspace"), "README's test command");
}

#[test]
fn the_checker_sees_a_broken_link_and_a_missing_anchor() {
    let dir = std::env::temp_dir().join(format!("oneside-guide-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("b.md"), "# The `wait_until` call, again!\n## Two\n## Two\n").unwrap();
    let page = dir.join("a.md");
    std::fs::write(
        &page,
        "[ok](b.md#the-wait_until-call-again) [ok](b.md#two-1) `[code](nowhere.md)`\n\
         [gone](nowhere.md) [bad](b.md#three) [web](https://example.org/x)\n```sh\n[x](in-code.md)\n```\n",
    )
    .unwrap();
    let broken = broken_links(&page);
    assert_eq!(broken.len(), 2, "{broken:?}");
    assert!(broken[0].starts_with("nowhere.md") && broken[1].starts_with("b.md#three"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_page_with_rust_code_runs_as_a_doc_test() {
    let lib = std::fs::read_to_string(repo_file("src/lib.rs")).unwrap();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        if !text.contains("```rust") {
            continue;
        }
        let name = page.file_name().unwrap().to_string_lossy().into_owned();
        let included = if name == "README.md" {
            "include_str!(\"../README.md\")".to_string()
        } else {
            format!("include_str!(\"../docs/src/{name}\")")
        };
        assert!(
            lib.contains(&included),
            "{name} has Rust code: add it to `mod guide` in src/lib.rs"
        );
    }
}

/// The guide quotes what the tools print: `rlaunch --version`'s line in
/// the install chapter is the real one (it had lost rlaunch's "oneside;"),
/// and the Python chapter's first run needs no more CPUs than a laptop has
/// (`oshrun -np 4` refused on 2 CPUs without `--oversubscribe`).
#[test]
fn the_guide_quotes_the_tools_as_they_are() {
    let install = std::fs::read_to_string(repo_file("docs/src/install.md")).unwrap();
    let out = std::process::Command::new(common::target_dir().join("rlaunch"))
        .arg("--version")
        .output()
        .expect("rlaunch runs");
    let version = String::from_utf8_lossy(&out.stdout);
    let version = version.lines().next().unwrap_or_default();
    assert!(
        install.contains(&format!("$ rlaunch --version\n{version}\n")),
        "install.md quotes another `rlaunch --version` than {version:?}"
    );
    let python = std::fs::read_to_string(repo_file("docs/src/python.md")).unwrap();
    for line in python.lines().filter(|l| l.contains("oshrun -np")) {
        let n: usize = line
            .split("oshrun -np ")
            .nth(1)
            .and_then(|rest| rest.split([' ', '`']).next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(n <= 2 || line.contains("--oversubscribe"), "python.md: {line}");
    }
}
