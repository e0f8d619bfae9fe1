//! `/proc/self/mountinfo`'s escapes: the kernel writes space, tab, newline and
//! backslash in a path as `\NNN` (octal). Read by the root's detached binds
//! (`engine/trees.rs`) and the strict runtime's Landlock rules
//! (`confine/landlock_mounts.rs`).

/// A mountinfo path field with its `\NNN` escapes undone.
pub fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::unescape;

    #[test]
    fn mountinfo_escapes_are_undone() {
        assert_eq!(unescape(r"/mnt/a\040b\134c"), r"/mnt/a b\c");
        assert_eq!(unescape(r"/plain"), "/plain");
        assert_eq!(unescape(r"/odd\04"), r"/odd\04");
    }
}
