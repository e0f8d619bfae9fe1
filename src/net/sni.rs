//! Peeks at the TLS ClientHello inside a CONNECT tunnel for its SNI host name,
//! and checks that what follows still has TLS record framing.
//!
//! A small parser rather than `tls-parser`: we need one extension of one message,
//! the input is attacker-controlled, and a hundred lines of explicit bounds
//! checks over `&[u8]` (no `unsafe`, no recursion, every length checked against
//! what is left) is easier to audit than a general parser and its nom stack.
//! It reassembles a ClientHello split over several handshake records, refuses
//! Encrypted Client Hello (the outer SNI would not be the real one), and refuses
//! more than one name.

/// Largest ClientHello accepted. Post-quantum key shares push real ones to ~2 KiB;
/// 32 KiB leaves room while bounding what we buffer before deciding.
pub const MAX_HELLO: usize = 32 * 1024;
/// TLSPlaintext is at most 2^14; TLSCiphertext (1.2) at most 2^14 + 2048.
const MAX_RECORD: usize = 16384 + 2048;

const CT_CHANGE_CIPHER_SPEC: u8 = 20;
const CT_HANDSHAKE: u8 = 22;
const CT_APPLICATION_DATA: u8 = 23;
const HS_CLIENT_HELLO: u8 = 1;
const EXT_SERVER_NAME: u16 = 0;
const EXT_ECH: u16 = 0xfe0d;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SniError {
    NotTls,
    NotClientHello,
    Malformed(&'static str),
    NoSni,
    MultipleNames,
    Ech,
    TooLarge,
    BadName,
}

impl std::fmt::Display for SniError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SniError::NotTls => f.write_str("tunnel data is not a TLS handshake"),
            SniError::NotClientHello => f.write_str("first handshake message is not a ClientHello"),
            SniError::Malformed(what) => write!(f, "malformed ClientHello: {what}"),
            SniError::NoSni => f.write_str("ClientHello has no SNI"),
            SniError::MultipleNames => f.write_str("ClientHello names more than one server"),
            SniError::Ech => f.write_str("ClientHello uses Encrypted Client Hello"),
            SniError::TooLarge => f.write_str("ClientHello too large"),
            SniError::BadName => f.write_str("SNI is not a valid host name"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Peek {
    /// Not enough bytes yet; read more and call again with the whole buffer.
    NeedMore,
    /// `consumed` bytes (whole records) carried the ClientHello.
    Done { sni: String, consumed: usize },
}

/// A cursor that fails instead of panicking when the input runs short.
struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], SniError> {
        if self.buf.len() < n {
            return Err(SniError::Malformed(what));
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }
    fn u8(&mut self, what: &'static str) -> Result<u8, SniError> {
        Ok(self.take(1, what)?[0])
    }
    fn u16(&mut self, what: &'static str) -> Result<u16, SniError> {
        let b = self.take(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    fn vec8(&mut self, what: &'static str) -> Result<&'a [u8], SniError> {
        let n = self.u8(what)? as usize;
        self.take(n, what)
    }
    fn vec16(&mut self, what: &'static str) -> Result<&'a [u8], SniError> {
        let n = self.u16(what)? as usize;
        self.take(n, what)
    }
}

/// Looks for a complete ClientHello at the start of `buf`.
pub fn peek_client_hello(buf: &[u8]) -> Result<Peek, SniError> {
    let mut hs: Vec<u8> = Vec::new();
    let mut pos = 0usize;
    loop {
        let Some(header) = buf.get(pos..pos + 5) else {
            return need_more(buf.len());
        };
        if header[0] != CT_HANDSHAKE || header[1] != 3 {
            return Err(if pos == 0 {
                SniError::NotTls
            } else {
                SniError::Malformed("non-handshake record inside ClientHello")
            });
        }
        let len = u16::from_be_bytes([header[3], header[4]]) as usize;
        if len == 0 || len > 16384 {
            return Err(SniError::Malformed("record length"));
        }
        let Some(fragment) = buf.get(pos + 5..pos + 5 + len) else {
            return need_more(buf.len());
        };
        hs.extend_from_slice(fragment);
        pos += 5 + len;
        if hs.len() < 4 {
            continue;
        }
        if hs[0] != HS_CLIENT_HELLO {
            return Err(SniError::NotClientHello);
        }
        let msg_len = u32::from_be_bytes([0, hs[1], hs[2], hs[3]]) as usize;
        if msg_len > MAX_HELLO {
            return Err(SniError::TooLarge);
        }
        if hs.len() < 4 + msg_len {
            continue;
        }
        if hs.len() > 4 + msg_len {
            // The client must wait for the server before sending more handshake
            // messages; extra bytes here are smuggling, not TLS.
            return Err(SniError::Malformed("data after ClientHello in its record"));
        }
        let sni = parse_client_hello(&hs[4..])?;
        return Ok(Peek::Done { sni, consumed: pos });
    }
}

fn need_more(have: usize) -> Result<Peek, SniError> {
    if have > MAX_HELLO + 64 * 5 {
        Err(SniError::TooLarge)
    } else {
        Ok(Peek::NeedMore)
    }
}

/// Parses a ClientHello body (after the 4-byte handshake header); returns the
/// single `host_name`, lowercased, trailing dot dropped.
pub fn parse_client_hello(body: &[u8]) -> Result<String, SniError> {
    let mut r = Reader { buf: body };
    let version = r.take(2, "legacy_version")?;
    if version[0] != 3 {
        return Err(SniError::Malformed("legacy_version"));
    }
    r.take(32, "random")?;
    let session_id = r.vec8("session_id")?;
    if session_id.len() > 32 {
        return Err(SniError::Malformed("session_id length"));
    }
    let suites = r.vec16("cipher_suites")?;
    if suites.is_empty() || suites.len() % 2 != 0 {
        return Err(SniError::Malformed("cipher_suites"));
    }
    if r.vec8("compression_methods")?.is_empty() {
        return Err(SniError::Malformed("compression_methods"));
    }
    if r.buf.is_empty() {
        // Extensions are optional before TLS 1.3; without them there is no SNI.
        return Err(SniError::NoSni);
    }
    let exts = r.vec16("extensions")?;
    if !r.buf.is_empty() {
        return Err(SniError::Malformed("trailing bytes after extensions"));
    }
    let mut exts = Reader { buf: exts };
    let mut sni: Option<String> = None;
    while !exts.buf.is_empty() {
        let ty = exts.u16("extension type")?;
        let data = exts.vec16("extension data")?;
        match ty {
            EXT_ECH => return Err(SniError::Ech),
            EXT_SERVER_NAME => {
                if sni.is_some() {
                    return Err(SniError::Malformed("duplicate server_name extension"));
                }
                sni = Some(parse_server_name(data)?);
            }
            _ => {}
        }
    }
    sni.ok_or(SniError::NoSni)
}

fn parse_server_name(data: &[u8]) -> Result<String, SniError> {
    let mut r = Reader { buf: data };
    let list = r.vec16("server_name_list")?;
    if !r.buf.is_empty() {
        return Err(SniError::Malformed("trailing bytes in server_name"));
    }
    let mut list = Reader { buf: list };
    let mut name: Option<&[u8]> = None;
    while !list.buf.is_empty() {
        let name_type = list.u8("name_type")?;
        let n = list.vec16("host_name")?;
        if name_type != 0 {
            return Err(SniError::Malformed("unknown server name type"));
        }
        if name.is_some() {
            return Err(SniError::MultipleNames);
        }
        name = Some(n);
    }
    let name = name.ok_or(SniError::NoSni)?;
    let name = std::str::from_utf8(name).map_err(|_| SniError::BadName)?;
    let name = super::allowlist::normalize_host(name);
    if super::allowlist::name_syntax_error(&name).is_some() {
        return Err(SniError::BadName);
    }
    Ok(name)
}

/// Follows TLS record framing on the client-to-server side of a tunnel after the
/// ClientHello, so that the tunnel carries a TLS stream and not, say, a second
/// plaintext `CONNECT` or raw HTTP aimed at whatever the allowed host relays to.
#[derive(Debug, Default)]
pub struct RecordCheck {
    header: [u8; 5],
    have: usize,
    body_left: usize,
}

impl RecordCheck {
    pub fn feed(&mut self, mut data: &[u8]) -> Result<(), SniError> {
        while !data.is_empty() {
            if self.body_left > 0 {
                let n = self.body_left.min(data.len());
                self.body_left -= n;
                data = &data[n..];
                continue;
            }
            let n = (5 - self.have).min(data.len());
            self.header[self.have..self.have + n].copy_from_slice(&data[..n]);
            self.have += n;
            data = &data[n..];
            if self.have == 5 {
                let [ty, major, _, hi, lo] = self.header;
                let len = u16::from_be_bytes([hi, lo]) as usize;
                if !(CT_CHANGE_CIPHER_SPEC..=CT_APPLICATION_DATA).contains(&ty) || major != 3 {
                    return Err(SniError::NotTls);
                }
                if len == 0 && ty != CT_APPLICATION_DATA || len > MAX_RECORD {
                    return Err(SniError::Malformed("record length"));
                }
                self.body_left = len;
                self.have = 0;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A real ClientHello from OpenSSL, made by Python's `ssl` module with a
    /// memory BIO (the same TLS stack pip uses), so the parser is tested on
    /// what it will actually see.
    pub(crate) fn python_client_hello(server_hostname: &str) -> Vec<u8> {
        let script = r#"
import ssl, sys
ctx = ssl.create_default_context()
i, o = ssl.MemoryBIO(), ssl.MemoryBIO()
s = ctx.wrap_bio(i, o, server_hostname=sys.argv[1])
try:
    s.do_handshake()
except ssl.SSLWantReadError:
    pass
sys.stdout.buffer.write(o.read())
"#;
        let out = std::process::Command::new("/usr/bin/python3")
            .args(["-c", script, server_hostname])
            .output()
            .expect("run python3");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.stdout.len() > 100);
        out.stdout
    }

    #[test]
    fn real_client_hello_sni() {
        let hello = python_client_hello("Files.PythonHosted.org");
        assert_eq!(
            peek_client_hello(&hello),
            Ok(Peek::Done {
                sni: "files.pythonhosted.org".into(),
                consumed: hello.len()
            })
        );
        // Every strict prefix must ask for more, never answer or panic.
        for cut in 0..hello.len() {
            assert_eq!(
                peek_client_hello(&hello[..cut]),
                Ok(Peek::NeedMore),
                "cut {cut}"
            );
        }
    }

    #[test]
    fn hello_split_over_records() {
        let hello = python_client_hello("pypi.org");
        let body = &hello[5..];
        // Re-frame the handshake message as 3 records of at most 100 bytes first.
        let mut split = Vec::new();
        for (i, chunk) in [&body[..1], &body[1..100], &body[100..]].iter().enumerate() {
            split.extend_from_slice(&[22, 3, 1]);
            split.extend_from_slice(&(chunk.len() as u16).to_be_bytes());
            split.extend_from_slice(chunk);
            let _ = i;
        }
        assert_eq!(
            peek_client_hello(&split),
            Ok(Peek::Done {
                sni: "pypi.org".into(),
                consumed: split.len()
            })
        );
    }

    #[test]
    fn not_tls_and_mutations_do_not_panic() {
        assert_eq!(
            peek_client_hello(b"CONNECT evil.com:443 HTTP/1.1\r\n\r\n"),
            Err(SniError::NotTls)
        );
        assert_eq!(
            peek_client_hello(b"GET / HTTP/1.1\r\n"),
            Err(SniError::NotTls)
        );
        let hello = python_client_hello("pypi.org");
        // Flip every byte in turn: the parser must return, and any name it
        // accepts must still be a valid host name.
        for i in 0..hello.len() {
            let mut m = hello.clone();
            m[i] ^= 0xff;
            if let Ok(Peek::Done { sni, .. }) = peek_client_hello(&m) {
                assert!(super::super::allowlist::name_syntax_error(&sni).is_none());
            }
        }
    }

    /// Builds a ClientHello body with the given extensions (type, data).
    fn hello_with(exts: &[(u16, Vec<u8>)]) -> Vec<u8> {
        let mut body = vec![3, 3];
        body.extend_from_slice(&[7; 32]);
        body.push(0); // session id
        body.extend_from_slice(&[0, 2, 0x13, 0x01]);
        body.extend_from_slice(&[1, 0]);
        let mut e = Vec::new();
        for (ty, data) in exts {
            e.extend_from_slice(&ty.to_be_bytes());
            e.extend_from_slice(&(data.len() as u16).to_be_bytes());
            e.extend_from_slice(data);
        }
        body.extend_from_slice(&(e.len() as u16).to_be_bytes());
        body.extend_from_slice(&e);
        body
    }

    fn sni_ext(names: &[&str]) -> Vec<u8> {
        let mut list = Vec::new();
        for n in names {
            list.push(0);
            list.extend_from_slice(&(n.len() as u16).to_be_bytes());
            list.extend_from_slice(n.as_bytes());
        }
        let mut d = (list.len() as u16).to_be_bytes().to_vec();
        d.extend_from_slice(&list);
        d
    }

    #[test]
    fn crafted_hellos() {
        assert_eq!(
            parse_client_hello(&hello_with(&[(0, sni_ext(&["a.org"]))])),
            Ok("a.org".into())
        );
        assert_eq!(
            parse_client_hello(&hello_with(&[(10, vec![0, 0])])),
            Err(SniError::NoSni)
        );
        assert_eq!(
            parse_client_hello(&hello_with(&[(0, sni_ext(&["a.org", "b.org"]))])),
            Err(SniError::MultipleNames)
        );
        assert_eq!(
            parse_client_hello(&hello_with(&[
                (0, sni_ext(&["a.org"])),
                (0xfe0d, vec![1, 2])
            ])),
            Err(SniError::Ech)
        );
        assert_eq!(
            parse_client_hello(&hello_with(&[
                (0, sni_ext(&["a.org"])),
                (0, sni_ext(&["b.org"]))
            ])),
            Err(SniError::Malformed("duplicate server_name extension"))
        );
        assert_eq!(
            parse_client_hello(&hello_with(&[(0, sni_ext(&["1.2.3.4\0x"]))])),
            Err(SniError::BadName)
        );
        assert_eq!(
            parse_client_hello(&hello_with(&[(0, sni_ext(&["a b.org"]))])),
            Err(SniError::BadName)
        );
    }

    #[test]
    fn record_check() {
        let mut c = RecordCheck::default();
        // An application-data record fed byte by byte, then a second one.
        let rec = [23u8, 3, 3, 0, 3, 1, 2, 3];
        for b in rec {
            c.feed(&[b]).unwrap();
        }
        c.feed(&rec).unwrap();
        assert_eq!(
            c.feed(b"CONNECT evil:443 HTTP/1.1\r\n"),
            Err(SniError::NotTls)
        );
        let mut c = RecordCheck::default();
        assert!(c.feed(&[23, 3, 3, 0xff, 0xff]).is_err());
    }
}
