//! Paths as text: lexical work on a path that reads nothing of the filesystem.

use std::path::{Path, PathBuf};

/// `path` made absolute and normal (`.` and `..` resolved lexically).
pub fn normal_abs(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            std::path::Component::Normal(n) => out.push(n),
            std::path::Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out
}
