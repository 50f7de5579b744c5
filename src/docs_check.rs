//! The docs say what the code does: README's hardening table, SECURITY.md's test counts and
//! docs/SPECIFICATION.md's rows are checked against the code (`make docs-check`, part of `make
//! lint`). The numbers are the code's; `RLOXSC_DOCS_FIX=1 cargo test --lib docs_check` rewrites the
//! counts in SECURITY.md rather than failing on them.

use std::path::{Path, PathBuf};

use crate::policy::{human, Policy, DEFAULT_CAPABILITIES};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// README's hardening-table row for `area` (the text between its first and last `|`).
fn readme_row(readme: &str, area: &str) -> String {
    readme
        .lines()
        .find(|l| l.starts_with(&format!("| {area} |")))
        .unwrap_or_else(|| panic!("README.md's hardening table has no `{area}` row"))
        .to_string()
}

/// `#[test]`s in the `.rs` files under `dir` (recursively).
fn count_tests(dir: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            n += count_tests(&p);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let text = std::fs::read_to_string(&p).unwrap();
            n += text.lines().filter(|l| l.trim() == "#[test]").count();
        }
    }
    n
}

#[test]
fn readme_hardening_table_has_the_numbers_of_the_code() {
    let readme = read("README.md");
    let p = Policy::default();
    let caps: Vec<String> = DEFAULT_CAPABILITIES.iter().map(|c| c.to_string()).collect();
    assert_eq!(
        p.capabilities.len(),
        caps.len(),
        "the default policy's capabilities are DEFAULT_CAPABILITIES"
    );
    let want = [
        (
            "privileges",
            format!("clamped to {} (never SETFCAP)", caps.join(", ")),
        ),
        (
            "limits",
            format!(
                "pids {} (ceiling {}), memory {} (ceiling {})",
                p.pids.default,
                p.pids.ceiling,
                human(p.memory_bytes.default),
                human(p.memory_bytes.ceiling)
            ),
        ),
        (
            "limits",
            format!(
                "RLIMIT_NOFILE {} (ceiling {})",
                p.nofile.default, p.nofile.ceiling
            ),
        ),
        (
            "scratch",
            format!(
                "({} default, {} ceiling)",
                human(p.tmpfs_bytes.default),
                human(p.tmpfs_bytes.ceiling)
            ),
        ),
        (
            "writable paths",
            format!(
                "tmpfs of {} (ceiling {}, never more than half the memory limit)",
                human(p.store_bytes.default),
                human(p.store_bytes.ceiling)
            ),
        ),
    ];
    for (area, text) in want {
        let row = readme_row(&readme, area);
        assert!(
            row.contains(&text),
            "README.md's `{area}` row should say `{text}`:\n{row}"
        );
    }
}

#[test]
fn security_md_counts_the_tests_there_are() {
    let root = repo();
    let unit = count_tests(&root.join("src"));
    let integration = count_tests(&root.join("tests"));
    let path = root.join("SECURITY.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let mut fixed = String::new();
    let mut wrong = vec![];
    for line in doc.split_inclusive('\n') {
        let mut line = line.to_string();
        for (what, n) in [
            (" unit tests:", unit),
            (" integration tests with", integration),
        ] {
            if let Some(rest) = line.strip_prefix("- ") {
                if let Some((num, tail)) = rest.split_once(what) {
                    if num.parse::<usize>().ok() != Some(n) {
                        wrong.push(format!("SECURITY.md says `{num}{what}`, the code has {n}"));
                        line = format!("- {n}{what}{tail}");
                    }
                }
            }
        }
        fixed.push_str(&line);
    }
    for what in [" unit tests:", " integration tests with"] {
        assert!(doc.contains(what), "SECURITY.md has no `- N{what}` line");
    }
    if !wrong.is_empty() && std::env::var("RLOXSC_DOCS_FIX").as_deref() == Ok("1") {
        std::fs::write(&path, fixed).unwrap();
        return;
    }
    assert!(
        wrong.is_empty(),
        "{} (RLOXSC_DOCS_FIX=1 make docs-check rewrites them)",
        wrong.join("; ")
    );
}

#[test]
fn readme_and_security_md_name_only_tests_that_exist() {
    // every `tests/x.rs::name` either doc names is a test function of that file
    for doc in [
        "README.md",
        "SECURITY.md",
        "contrib/README.md",
        "docs/SPECIFICATION.md",
    ] {
        let text = read(doc);
        for (i, _) in text.match_indices("`tests/") {
            let rest = &text[i + 1..];
            let Some(end) = rest.find('`') else { continue };
            let r = &rest[..end];
            let Some((file, name)) = r.split_once(".rs::") else {
                continue;
            };
            let src = read(&format!("{file}.rs"));
            assert!(
                src.contains(&format!("fn {name}(")),
                "{doc} names {r}, which is not a test there"
            );
        }
    }
}
