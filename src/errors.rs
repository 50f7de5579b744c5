//! Error text: libcontainer's errors flattened into one line, with the causes its child processes
//! logged before they reported a one-line summary.
//!
//! libcontainer wraps the one thing that failed in generic phrases ("failed to create container:
//! exec process failed with error error in executing process : failed to set sysctl"), and its init
//! logs the specific cause ("failed to set sysctl net.ipv4.ping_group_range=0 2147483647: Invalid
//! argument (os error 22)") before reporting that summary. [`error_chain`] drops the wrappers,
//! [`cause_suffix`] keeps only causes that add something, and [`tidy`] folds a cause that merely
//! spells out the summary's last phrase into it, so the user reads the specific cause once.

/// Phrases libcontainer puts around the one thing that failed, which say nothing of their own (rloxsc
/// words its own context: "cannot create container "x": ..."). Longest first.
const WRAPPERS: &[&str] = &[
    // channel.rs: ExecError(format!("error in executing process : {err}")) shown as
    // "exec process failed with error {0}"
    "exec process failed with error error in executing process : ",
    "exec process failed with error ",
    "error in executing process : ",
    // the intermediate process's error event before it reports the init's failure
    "failed to initialize container process: ",
    // CreateContainerError's Display
    "failed to create container: ",
];

/// Where a phrase of an error line starts: after ": " (a chain), "; " (causes joined) or a cause's
/// opening parenthesis.
const SEPARATORS: &[&str] = &[": ", "; ", "(cause: "];

/// `s` with libcontainer's wrapper phrases removed wherever a phrase starts with one.
pub fn strip_wrappers(s: &str) -> String {
    let mut out = s.to_string();
    loop {
        let before = out.len();
        for w in WRAPPERS {
            if let Some(rest) = out.strip_prefix(w) {
                out = rest.to_string();
            }
            for sep in SEPARATORS {
                let with_sep = format!("{sep}{w}");
                while let Some(i) = out.find(&with_sep) {
                    out.replace_range(i + sep.len()..i + with_sep.len(), "");
                }
            }
        }
        if out.len() == before {
            return out;
        }
    }
}

/// Whether a captured cause only says the summary again: it is in the summary, or the summary is one
/// phrase (what libcontainer's init reports: "failed to set sysctl") and the cause is that phrase under
/// libcontainer's context ("failed to wait for init ready: failed to set sysctl").
fn repeats(summary: &str, cause: &str) -> bool {
    summary.contains(cause)
        || (!summary.is_empty()
            && !summary.contains(": ")
            && cause.ends_with(&format!(": {summary}")))
}

/// The first captured error lines that say more than the summary (e.g. which mount failed and how),
/// as " (cause: ...)", or nothing. A line that is the summary again (once libcontainer's wrappers are
/// dropped: "failed to initialize container process: failed to set sysctl") adds nothing.
pub fn cause_suffix(summary: &str, captured: &[String]) -> String {
    let summary = strip_wrappers(summary);
    let mut picked: Vec<String> = Vec::new();
    for l in captured {
        let l = strip_wrappers(l.trim());
        let l = l.trim();
        if l.is_empty() || repeats(&summary, l) || picked.iter().any(|p| p == l) {
            continue;
        }
        picked.push(l.to_string());
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

/// Flattens an error and its sources into one line, without libcontainer's wrapper phrases.
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
    strip_wrappers(&s)
}

/// The final error text as the user reads it: libcontainer's wrapper phrases dropped, causes that
/// the text already says dropped, and a first cause that starts with the phrase it explains put in
/// that phrase's place ("...: failed to set sysctl (cause: failed to set sysctl net.x=1: Invalid
/// argument)" becomes "...: failed to set sysctl net.x=1: Invalid argument"). Nothing else changes.
pub fn tidy(msg: &str) -> String {
    const OPEN: &str = " (cause: ";
    let msg = strip_wrappers(msg);
    let Some(at) = msg.find(OPEN) else {
        return msg;
    };
    if !msg.ends_with(')') {
        return msg;
    }
    let head = &msg[..at];
    let causes: Vec<&str> = msg[at + OPEN.len()..msg.len() - 1]
        .split("; ")
        .filter(|c| !c.trim().is_empty() && !head.contains(c.trim()))
        .collect();
    let Some((first, rest)) = causes.split_first() else {
        return head.to_string();
    };
    // the summary's last phrase: what the first cause may spell out
    let leaf = head.rsplit(": ").next().unwrap_or(head);
    if leaf.len() >= 8 && first.starts_with(leaf) {
        let folded = format!("{}{}", &head[..head.len() - leaf.len()], first);
        if rest.is_empty() {
            folded
        } else {
            format!("{folded}{OPEN}{})", rest.join("; "))
        }
    } else {
        format!("{head}{OPEN}{})", causes.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEEN: &str = "cannot create container \"x\": failed to create container: exec process failed \
        with error error in executing process : failed to set sysctl (cause: failed to set sysctl \
        net.ipv4.ping_group_range=0 2147483647: Invalid argument (os error 22); failed to initialize \
        container process: failed to set sysctl)";

    #[test]
    fn wrappers_are_dropped() {
        assert_eq!(
            strip_wrappers(
                "failed to create container: exec process failed with error error in executing \
                 process : failed to prepare rootfs"
            ),
            "failed to prepare rootfs"
        );
        assert_eq!(
            strip_wrappers("cannot exec: exec process failed with error failed to join"),
            "cannot exec: failed to join"
        );
        assert_eq!(
            strip_wrappers("failed to initialize container process: failed to set sysctl"),
            "failed to set sysctl"
        );
        // only at the start of a segment
        assert_eq!(
            strip_wrappers("a path named failed to create container: x"),
            "a path named failed to create container: x"
        );
        assert_eq!(strip_wrappers("nothing to drop"), "nothing to drop");
    }

    #[test]
    fn sysctl_failure_reads_cleanly() {
        // what launch.rs builds from libcontainer's error and the captured lines
        let summary = strip_wrappers(
            "failed to create container: exec process failed with error error in executing process : \
             failed to set sysctl",
        );
        // the error events libcontainer's processes logged, in order
        let captured = vec![
            "failed to set sysctl net.ipv4.ping_group_range=0 2147483647: Invalid argument (os error 22)"
                .to_string(),
            "failed to initialize container process: failed to set sysctl".to_string(),
            "failed to wait for init ready: exec process failed with error error in executing \
             process : failed to set sysctl"
                .to_string(),
            "failed to run container process exec process failed with error error in executing \
             process : failed to set sysctl"
                .to_string(),
        ];
        let cause = cause_suffix(&summary, &captured);
        assert_eq!(
            cause,
            " (cause: failed to set sysctl net.ipv4.ping_group_range=0 2147483647: Invalid argument \
             (os error 22))"
        );
        let msg = format!("cannot create container \"x\": {summary}{cause}");
        let want = "cannot create container \"x\": failed to set sysctl \
                    net.ipv4.ping_group_range=0 2147483647: Invalid argument (os error 22)";
        assert_eq!(tidy(&msg), want);
        // the text seen before this formatting (wrappers, a cause repeating the summary) too
        assert_eq!(tidy(SEEN), want);
    }

    #[test]
    fn causes_that_add_something_stay() {
        let summary = "failed to prepare rootfs";
        let captured = vec![
            "failed to mount Mount { destination: \"/sys\" }: EPERM".to_string(),
            "failed to initialize container process: failed to prepare rootfs".to_string(),
            "second cause".to_string(),
            "third cause".to_string(),
        ];
        let cause = cause_suffix(summary, &captured);
        assert_eq!(
            cause,
            " (cause: failed to mount Mount { destination: \"/sys\" }: EPERM; second cause)"
        );
        // a cause that does not start with the summary's last phrase is not folded in
        let msg = format!("cannot create container \"x\": {summary}{cause}");
        assert_eq!(tidy(&msg), msg);
    }

    #[test]
    fn same_os_error_in_another_place_is_kept() {
        // the summary has more than one phrase: a cause ending the same way says where
        let summary = "failed to apply resource limits: Operation not permitted (os error 1)";
        let captured =
            vec!["failed to write /x/pids.max: Operation not permitted (os error 1)".into()];
        assert_eq!(
            cause_suffix(summary, &captured),
            " (cause: failed to write /x/pids.max: Operation not permitted (os error 1))"
        );
    }

    #[test]
    fn policy_key_between_summary_and_cause_is_kept() {
        let msg =
            "cannot create container \"x\": failed to prepare rootfs (policy key network.mode) \
                   (cause: failed to prepare rootfs: mount \"sysfs\": EPERM)";
        assert_eq!(tidy(msg), msg);
    }

    #[test]
    fn folding_keeps_further_causes() {
        let msg =
            "cannot create container \"x\": failed to set sysctl (cause: failed to set sysctl \
                   a=1: EINVAL; another thing)";
        assert_eq!(
            tidy(msg),
            "cannot create container \"x\": failed to set sysctl a=1: EINVAL (cause: another thing)"
        );
    }

    #[test]
    fn plain_messages_are_unchanged() {
        for m in [
            "container \"x\" does not exist",
            "cannot start container \"x\": it is not created (status: running)",
            "refusing the mount: (cause: odd",
        ] {
            assert_eq!(tidy(m), m);
        }
        assert_eq!(cause_suffix("s", &[]), "");
        assert_eq!(cause_suffix("s", &["  ".to_string(), "s".to_string()]), "");
    }

    #[test]
    fn chain_drops_wrappers_and_repeats() {
        #[derive(Debug)]
        struct E(&'static str, Option<Box<E>>);
        impl std::fmt::Display for E {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.0)
            }
        }
        impl std::error::Error for E {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                self.1.as_deref().map(|e| e as _)
            }
        }
        let e = E(
            "failed to create container: exec process failed with error error in executing \
             process : failed to set sysctl",
            Some(Box::new(E("failed to set sysctl", None))),
        );
        assert_eq!(error_chain(&e), "failed to set sysctl");
        let e = E("cannot read", Some(Box::new(E("io error", None))));
        assert_eq!(error_chain(&e), "cannot read: io error");
    }
}
