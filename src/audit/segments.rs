//! Segment files: naming, listing, reading (plain or gzip) and compression.
//!
//! A segment is `seg-NNNNNNNN.jsonl` (active or not yet compressed) or
//! `seg-NNNNNNNN.jsonl.gz`. Numbers grow by one per segment; the active
//! segment is the highest number and is always plain. New files appear only
//! through `*.tmp` + rename, so a crash leaves either the old or the new state
//! plus a stray `.tmp` that the next writer removes.

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use flate2::read::GzDecoder;
use flate2::write::GzEncoder;

use super::error::AuditError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentFile {
    pub number: u64,
    pub path: PathBuf,
    pub compressed: bool,
    /// A complete `.gz` copy that also exists beside the plain file (crash
    /// between compressing and unlinking the plain file).
    pub duplicate_gz: Option<PathBuf>,
}

pub fn plain_name(n: u64) -> String {
    format!("seg-{n:08}.jsonl")
}

pub fn parse_name(name: &str) -> Option<(u64, bool)> {
    let rest = name.strip_prefix("seg-")?;
    let (num, compressed) = if let Some(n) = rest.strip_suffix(".jsonl.gz") {
        (n, true)
    } else {
        (rest.strip_suffix(".jsonl")?, false)
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((num.parse().ok()?, compressed))
}

/// Segments of `dir` sorted by number; a plain file wins over its `.gz` twin
/// because the twin may be the one being written.
pub fn list(dir: &Path) -> Result<Vec<SegmentFile>, AuditError> {
    let mut out: Vec<SegmentFile> = Vec::new();
    let rd = fs::read_dir(dir).map_err(AuditError::io("list audit directory", dir))?;
    for ent in rd {
        let ent = ent.map_err(AuditError::io("list audit directory", dir))?;
        let name = ent.file_name();
        let Some((number, compressed)) = name.to_str().and_then(parse_name) else {
            continue;
        };
        out.push(SegmentFile {
            number,
            path: ent.path(),
            compressed,
            duplicate_gz: None,
        });
    }
    out.sort_by_key(|s| (s.number, s.compressed));
    let mut merged: Vec<SegmentFile> = Vec::with_capacity(out.len());
    for s in out {
        match merged.last_mut() {
            Some(last) if last.number == s.number => last.duplicate_gz = Some(s.path),
            _ => merged.push(s),
        }
    }
    Ok(merged)
}

pub fn read_all(seg: &SegmentFile) -> Result<Vec<u8>, AuditError> {
    let f = File::open(&seg.path).map_err(AuditError::io("open segment", &seg.path))?;
    let mut buf = Vec::new();
    if seg.compressed {
        GzDecoder::new(f)
            .read_to_end(&mut buf)
            .map_err(AuditError::io("decompress segment", &seg.path))?;
    } else {
        BufReader::new(f)
            .read_to_end(&mut buf)
            .map_err(AuditError::io("read segment", &seg.path))?;
    }
    Ok(buf)
}

/// A line and its 0-based byte offset in the segment.
pub type Line<'a> = (usize, &'a [u8]);

/// Splits into complete lines (without `\n`, with their 0-based byte offset)
/// and the torn remainder after the last `\n`, if any.
pub fn split_lines(buf: &[u8]) -> (Vec<Line<'_>>, Option<Line<'_>>) {
    let mut lines = Vec::new();
    let mut start = 0;
    for (i, b) in buf.iter().enumerate() {
        if *b == b'\n' {
            lines.push((start, &buf[start..i]));
            start = i + 1;
        }
    }
    let torn = (start < buf.len()).then(|| (start, &buf[start..]));
    (lines, torn)
}

/// The end of a plain segment as seen by the writer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tail {
    /// Last complete line (without `\n`), if any.
    pub last_line: Option<Vec<u8>>,
    /// Byte offset just past the last complete line.
    pub good_len: u64,
    /// Bytes after the last `\n` (a torn write).
    pub torn_bytes: u64,
}

/// Reads only the end of the file: the writer does this on every append after
/// another process wrote, and the active segment may be megabytes long.
pub fn read_tail(f: &File, len: u64) -> std::io::Result<Tail> {
    const CHUNK: u64 = 64 * 1024;
    let mut buf: Vec<u8> = Vec::new();
    let mut pos = len;
    loop {
        // Newline positions within buf (which holds file[pos..len]).
        let nls: Vec<usize> = buf
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .map(|(i, _)| i)
            .collect();
        let last_nl = nls.last().copied();
        let enough = nls.len() >= 2 || pos == 0;
        if enough {
            return Ok(match last_nl {
                None => Tail {
                    last_line: None,
                    good_len: pos,
                    torn_bytes: len - pos,
                },
                Some(e) => {
                    let s = if nls.len() >= 2 {
                        nls[nls.len() - 2] + 1
                    } else {
                        0
                    };
                    Tail {
                        last_line: Some(buf[s..e].to_vec()),
                        good_len: pos + e as u64 + 1,
                        torn_bytes: len - (pos + e as u64 + 1),
                    }
                }
            });
        }
        let start = pos.saturating_sub(CHUNK);
        let mut chunk = vec![0u8; (pos - start) as usize];
        f.read_exact_at(&mut chunk, start)?;
        chunk.extend_from_slice(&buf);
        buf = chunk;
        pos = start;
    }
}

pub fn read_first_line(path: &Path) -> Result<Option<Vec<u8>>, AuditError> {
    let f = File::open(path).map_err(AuditError::io("open segment", path))?;
    let mut line = Vec::new();
    BufReader::new(f)
        .read_until(b'\n', &mut line)
        .map_err(AuditError::io("read segment", path))?;
    if line.last() == Some(&b'\n') {
        line.pop();
        Ok(Some(line))
    } else {
        Ok(None)
    }
}

pub fn sync_dir(dir: &Path) -> Result<(), AuditError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(AuditError::io("fsync audit directory", dir))
}

/// Writes `content` to `dir/name.tmp` (a stale one from a crash removed
/// first) with `mode`, synced to disk, and returns that temporary path and
/// the final one. The caller decides how the file is installed: a segment
/// never replaces one, a key file does. `steps` names the create and write
/// steps in errors.
pub fn write_synced_tmp(
    dir: &Path,
    name: &str,
    mode: u32,
    content: &[u8],
    steps: [&'static str; 2],
) -> Result<(PathBuf, PathBuf), AuditError> {
    let tmp = dir.join(format!("{name}.tmp"));
    let _ = fs::remove_file(&tmp);
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)
        .map_err(AuditError::io(steps[0], &tmp))?;
    f.write_all(content)
        .and_then(|_| f.sync_all())
        .map_err(AuditError::io(steps[1], &tmp))?;
    Ok((tmp, dir.join(name)))
}

/// Writes `content` as a new file `name` in `dir` via a temporary file, so the
/// file appears complete or not at all.
pub fn create_complete(dir: &Path, name: &str, content: &[u8]) -> Result<PathBuf, AuditError> {
    let (tmp, dst) = write_synced_tmp(
        dir,
        name,
        0o600,
        content,
        ["create segment", "write segment"],
    )?;
    if dst.exists() {
        let _ = fs::remove_file(&tmp);
        return Err(AuditError::Io {
            step: "install segment",
            path: dst,
            source: std::io::Error::from(std::io::ErrorKind::AlreadyExists),
        });
    }
    fs::rename(&tmp, &dst).map_err(AuditError::io("install segment", &dst))?;
    sync_dir(dir)?;
    Ok(dst)
}

/// Replaces a closed plain segment by its gzip form, keeping its mtime
/// (retention ages segments by mtime).
pub fn compress(dir: &Path, seg: &SegmentFile) -> Result<(), AuditError> {
    if seg.compressed {
        return Ok(());
    }
    let gz_path = PathBuf::from(format!("{}.gz", seg.path.display()));
    let tmp = PathBuf::from(format!("{}.gz.tmp", seg.path.display()));
    let mtime = fs::metadata(&seg.path)
        .and_then(|m| m.modified())
        .map_err(AuditError::io("stat segment", &seg.path))?;
    let data = read_all(seg)?;
    let _ = fs::remove_file(&tmp);
    let f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(AuditError::io("create compressed segment", &tmp))?;
    let mut enc = GzEncoder::new(f, flate2::Compression::default());
    enc.write_all(&data)
        .and_then(|_| enc.finish())
        .and_then(|f| {
            f.sync_all()?;
            f.set_modified(mtime)
        })
        .map_err(AuditError::io("write compressed segment", &tmp))?;
    fs::rename(&tmp, &gz_path).map_err(AuditError::io("install compressed segment", &gz_path))?;
    sync_dir(dir)?;
    fs::remove_file(&seg.path)
        .map_err(AuditError::io("remove compressed plain segment", &seg.path))?;
    sync_dir(dir)
}

/// Removes leftovers of interrupted operations. Only called with the lock held.
pub fn remove_tmp_files(dir: &Path) -> Result<(), AuditError> {
    let rd = fs::read_dir(dir).map_err(AuditError::io("list audit directory", dir))?;
    for ent in rd.flatten() {
        let name = ent.file_name();
        if name
            .to_str()
            .is_some_and(|n| n.starts_with("seg-") && n.ends_with(".tmp"))
        {
            fs::remove_file(ent.path())
                .map_err(AuditError::io("remove temporary file", ent.path()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(plain_name(3), "seg-00000003.jsonl");
        assert_eq!(parse_name("seg-00000003.jsonl"), Some((3, false)));
        assert_eq!(parse_name("seg-00000003.jsonl.gz"), Some((3, true)));
        assert_eq!(parse_name("seg-00000003.jsonl.tmp"), None);
        assert_eq!(parse_name("seg-.jsonl"), None);
        assert_eq!(parse_name("seg-+1.jsonl"), None);
    }

    #[test]
    fn split_and_tail() {
        let (l, t) = split_lines(b"a\nbb\ncc");
        assert_eq!(l, vec![(0, &b"a"[..]), (2, &b"bb"[..])]);
        assert_eq!(t, Some((5, &b"cc"[..])));
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        for (content, last, good, torn) in [
            (&b""[..], None, 0, 0),
            (b"abc", None, 0, 3),
            (b"a\n", Some(&b"a"[..]), 2, 0),
            (b"a\nbb\n", Some(b"bb"), 5, 0),
            (b"a\nbb\ncc", Some(b"bb"), 5, 2),
        ] {
            fs::write(&p, content).unwrap();
            let f = File::open(&p).unwrap();
            let t = read_tail(&f, content.len() as u64).unwrap();
            assert_eq!(t.last_line.as_deref(), last);
            assert_eq!((t.good_len, t.torn_bytes), (good, torn));
        }
        // A last line longer than one read chunk.
        let mut big = b"x\n".to_vec();
        big.extend(std::iter::repeat_n(b'y', 200_000));
        big.extend(b"\nzz");
        fs::write(&p, &big).unwrap();
        let t = read_tail(&File::open(&p).unwrap(), big.len() as u64).unwrap();
        assert_eq!(t.last_line.unwrap().len(), 200_000);
        assert_eq!(t.torn_bytes, 2);
    }

    #[test]
    fn compress_keeps_content_and_plain_wins() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join(plain_name(1)), b"l1\nl2\n").unwrap();
        let segs = list(d.path()).unwrap();
        compress(d.path(), &segs[0]).unwrap();
        let segs = list(d.path()).unwrap();
        assert_eq!(segs.len(), 1);
        assert!(segs[0].compressed);
        assert_eq!(read_all(&segs[0]).unwrap(), b"l1\nl2\n");
        fs::write(d.path().join(plain_name(1)), b"l1\nl2\n").unwrap();
        let segs = list(d.path()).unwrap();
        assert!(!segs[0].compressed && segs[0].duplicate_gz.is_some());
    }
}
