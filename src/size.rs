//! Byte sizes, in the one grammar rloxsc reads them in: a tmpfs's `size=`, the `run.rloxsc.*`
//! annotations and flags (`--file-size`, `--disk`), and `rloxsc update`'s memory flags (runc's
//! `--memory 512m`). Pure, no I/O.
//!
//! A size is a whole number with an optional binary unit, case-insensitive: `k`, `m`, `g`, `t`, `p`
//! (times 2^10 ... 2^50), optionally followed by `i` and/or `b` as Docker's and runc's flags allow
//! (`512m`, `512MiB`, `64kb`), with blanks around it and between number and unit. A size that does
//! not fit in 64 bits is refused, never wrapped or saturated.

/// The number of bytes `s` names, or `None` when it is not a size.
pub fn parse(s: &str) -> Option<u64> {
    let t = s.trim();
    let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return None;
    }
    let number: u64 = t[..digits].parse().ok()?;
    let mut unit = t[digits..]
        .trim_start()
        .chars()
        .map(|c| c.to_ascii_lowercase());
    let shift = match unit.next() {
        None => return Some(number),
        Some('k') => 10,
        Some('m') => 20,
        Some('g') => 30,
        Some('t') => 40,
        Some('p') => 50,
        Some('b') => return unit.next().is_none().then_some(number),
        Some(_) => return None,
    };
    let rest: String = unit.collect();
    if !matches!(rest.as_str(), "" | "b" | "i" | "ib") {
        return None;
    }
    number.checked_mul(1u64 << shift)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn sizes_in_every_spelling_the_callers_use() {
        assert_eq!(parse("100"), Some(100));
        assert_eq!(parse("100b"), Some(100));
        assert_eq!(parse("64m"), Some(64 << 20));
        assert_eq!(parse("65536k"), Some(65536 << 10));
        assert_eq!(parse(" 2 G "), Some(2 << 30));
        assert_eq!(parse("512MiB"), Some(512 << 20));
        assert_eq!(parse("10kb"), Some(10 << 10));
        assert_eq!(parse("1t"), Some(1 << 40));
    }

    #[test]
    fn what_is_not_a_size_is_refused() {
        for bad in [
            "", "x", "m", "-1", "1.5g", "10q", "10mbb", "10 m b", "50%", "0x10",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
        // too large for 64 bits: refused, not wrapped
        assert_eq!(parse("99999999999999999999"), None);
        assert_eq!(parse("17179869184g"), None);
    }
}
