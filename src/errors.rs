//! Error text: libcontainer's errors flattened into one line, with the causes its child processes
//! logged before they reported a one-line summary.

/// The first captured error lines that say more than the summary (e.g. which mount failed and how),
/// as " (cause: ...)", or nothing.
pub fn cause_suffix(summary: &str, captured: &[String]) -> String {
    let mut picked: Vec<&str> = Vec::new();
    for l in captured {
        let l = l.trim();
        if l.is_empty() || summary.contains(l) || picked.iter().any(|p| p == &l) {
            continue;
        }
        picked.push(l);
        if picked.len() == 2 {
            break;
        }
    }
    if picked.is_empty() {
        String::new()
    } else {
        format!(" (cause: {})", picked.join("; "))
    }
}

/// Flattens an error and its sources into one line.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        cur = c.source();
    }
    s
}
