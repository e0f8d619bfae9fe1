//! Payment details swapped (MB951): files found by searching (walks,
//! globs) read and written back in place by a script that carries a
//! payment identifier of its own: an IBAN with a valid check, a
//! crypto-currency address. Invoices, ledgers, shop settings and donation
//! pages then pay someone else. Invoices written afresh with one's own
//! bank details, converters writing another file and validators that only
//! read are not this. The clipboard variant is MB935 ([`super::recon`]).

use super::effects::Effects;
use super::literal::shorten;
use super::{line, Analyzer};

/// An IBAN: country, check digits, account, and the ISO 13616 mod-97 check.
pub(super) fn iban(t: &str) -> bool {
    let b = t.as_bytes();
    let shape = (15..=34).contains(&b.len())
        && b[..2].iter().all(u8::is_ascii_uppercase)
        && b[2..4].iter().all(u8::is_ascii_digit)
        && b[4..]
            .iter()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    if !shape {
        return false;
    }
    let mut rest = 0u32;
    for c in t[4..].chars().chain(t[..4].chars()) {
        let Some(v) = c.to_digit(36) else {
            return false;
        };
        rest = (if v >= 10 {
            rest * 100 + v
        } else {
            rest * 10 + v
        }) % 97;
    }
    rest == 1
}

/// A bank account or a crypto-currency address. A legacy Bitcoin address
/// must also be base58 with both cases, which a hex digest or an
/// identifier that happens to start with `1` or `3` is not.
pub(super) fn payment_id(t: &str) -> bool {
    if iban(t) {
        return true;
    }
    if !super::recon::wallet_address(t) {
        return false;
    }
    let legacy = t.starts_with('1') || t.starts_with('3');
    !legacy
        || (t
            .chars()
            .all(|c| c.is_ascii_alphanumeric() && !"0OIl".contains(c))
            && t.chars().any(|c| c.is_ascii_uppercase())
            && t.chars().any(|c| c.is_ascii_lowercase()))
}

/// A line computing IBAN check digits (ISO 7064 mod 97-10): `98 - n % 97`,
/// however spaced. Validators compute `n % 97 == 1`; only a script making an
/// account number of its own subtracts from 98.
fn iban_check_digits(line: &str) -> bool {
    let compact: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    compact
        .find("98-")
        .is_some_and(|i| compact[i..].contains("%97"))
}

impl<'t> Analyzer<'t> {
    /// The line where the script makes an IBAN of its own: one built at run
    /// time from parts, so that no literal in it passes the check.
    fn builds_iban(&self) -> Option<String> {
        // One pass over the whole text for `%` (a char pattern: memchr),
        // then only the lines where `% 97` follows are read.
        let src = self.src;
        let start = src.match_indices('%').find_map(|(at, _)| {
            if !src[at + 1..].trim_start().starts_with("97") {
                return None;
            }
            let start = src[..at].rfind('\n').map_or(0, |i| i + 1);
            let end = src[at..].find('\n').map_or(src.len(), |i| at + i);
            iban_check_digits(&src[start..end]).then_some(start)
        })?;
        Some(format!(
            "that makes an IBAN of its own (check digits computed, line {})",
            src[..start].matches('\n').count() + 1
        ))
    }

    /// MB951: files found by searching rewritten in place by a script that
    /// carries a payment identifier.
    pub(super) fn check_payment(&mut self, fx: &Effects<'t>) {
        let searched_writes: Vec<_> = fx
            .writes
            .iter()
            .filter(|w| w.paths.iter().any(|p| p.contains('*')))
            .collect();
        if searched_writes.is_empty() {
            return;
        }
        let carried = self
            .first_constant_text(|t| payment_id(t.trim()))
            .map(|(at, id)| {
                format!(
                    "carrying the payment details `{}` (line {})",
                    shorten(&id),
                    line(at)
                )
            });
        let Some(payee) = carried.or_else(|| self.builds_iban()) else {
            return;
        };
        let read = self.paths_read();
        let rewritten = searched_writes.iter().find_map(|w| {
            let p = w
                .paths
                .iter()
                .find(|p| p.contains('*') && read.contains(*p))?;
            Some((w.call, p.clone()))
        });
        if let Some((at, path)) = rewritten {
            let detail = format!(
                "files found by searching ({path}) are read and written back (line {}) by a script {payee}: whoever pays from them pays that account",
                line(at),
            );
            self.add("MB951", at, detail);
        }
    }
}
