//! Human-friendly sizes and durations for the configuration file and the CLI.
//!
//! Hand-written on purpose: the accepted grammar is deliberately small and strict
//! (`256MiB`, `1GiB`, `30s`, `2m`), so that a typo such as `1 gigabyte` is an error
//! naming the setting, not a silently different number. General-purpose crates
//! accept far more than we want to document.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A size in bytes, written as an integer with an optional unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(pub u64);

const UNITS: &[(&str, u64)] = &[
    ("B", 1),
    ("K", 1 << 10),
    ("KiB", 1 << 10),
    ("KB", 1000),
    ("M", 1 << 20),
    ("MiB", 1 << 20),
    ("MB", 1_000_000),
    ("G", 1 << 30),
    ("GiB", 1 << 30),
    ("GB", 1_000_000_000),
    ("T", 1 << 40),
    ("TiB", 1 << 40),
];

impl FromStr for ByteSize {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        let (num, unit) = s.split_at(split);
        if num.is_empty() {
            return Err(format!(
                "invalid size {s:?}: expected a whole number with an optional unit, e.g. 256MiB or 1GiB"
            ));
        }
        let n: u64 = num
            .parse()
            .map_err(|_| format!("invalid size {s:?}: number too large"))?;
        let mult = if unit.is_empty() {
            1
        } else {
            UNITS
                .iter()
                .find(|(u, _)| *u == unit)
                .map(|(_, m)| *m)
                .ok_or_else(|| {
                    format!("invalid size {s:?}: unknown unit {unit:?} (use B, KiB, MiB, GiB, TiB, KB, MB or GB)")
                })?
        };
        n.checked_mul(mult)
            .map(ByteSize)
            .ok_or_else(|| format!("invalid size {s:?}: too large"))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        for (unit, m) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
            if b >= m && b.is_multiple_of(m) {
                return write!(f, "{}{unit}", b / m);
            }
        }
        write!(f, "{b}B")
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Str(String),
        }
        match Raw::deserialize(d)? {
            Raw::Int(n) => Ok(ByteSize(n)),
            Raw::Str(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

/// A duration written as `30s`, `2m`, `1h`, `500ms` or a bare number of seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Seconds(pub Duration);

impl FromStr for Seconds {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let split = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(s.len());
        let (num, unit) = s.split_at(split);
        let n: f64 = num.parse().map_err(|_| {
            format!("invalid duration {s:?}: expected a number with an optional unit, e.g. 30s, 2m or 500ms")
        })?;
        let secs = match unit {
            "" | "s" => n,
            "ms" => n / 1000.0,
            "m" => n * 60.0,
            "h" => n * 3600.0,
            _ => {
                return Err(format!(
                    "invalid duration {s:?}: unknown unit {unit:?} (use ms, s, m or h)"
                ))
            }
        };
        if !secs.is_finite() || secs <= 0.0 {
            return Err(format!("invalid duration {s:?}: must be greater than 0"));
        }
        if secs > 7.0 * 86400.0 {
            return Err(format!("invalid duration {s:?}: longer than 7 days"));
        }
        Ok(Seconds(Duration::from_secs_f64(secs)))
    }
}

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Num(f64),
            Str(String),
        }
        match Raw::deserialize(d)? {
            Raw::Num(n) => n.to_string().parse().map_err(serde::de::Error::custom),
            Raw::Str(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

impl Serialize for Seconds {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.0.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_strictly() {
        assert_eq!("256MiB".parse::<ByteSize>().unwrap().0, 256 << 20);
        assert_eq!("1GiB".parse::<ByteSize>().unwrap().0, 1 << 30);
        assert_eq!("4096".parse::<ByteSize>().unwrap().0, 4096);
        assert_eq!("2MB".parse::<ByteSize>().unwrap().0, 2_000_000);
        assert!("1 gigabyte".parse::<ByteSize>().is_err());
        assert!("-5MiB".parse::<ByteSize>().is_err());
        assert!("MiB".parse::<ByteSize>().is_err());
        assert!("99999999999999999999".parse::<ByteSize>().is_err());
        assert_eq!(ByteSize(256 << 20).to_string(), "256MiB");
    }

    #[test]
    fn durations_parse_strictly() {
        assert_eq!("30s".parse::<Seconds>().unwrap().0, Duration::from_secs(30));
        assert_eq!("2m".parse::<Seconds>().unwrap().0, Duration::from_secs(120));
        assert_eq!(
            "1.5".parse::<Seconds>().unwrap().0,
            Duration::from_millis(1500)
        );
        assert_eq!(
            "250ms".parse::<Seconds>().unwrap().0,
            Duration::from_millis(250)
        );
        assert!("0".parse::<Seconds>().is_err());
        assert!("-3".parse::<Seconds>().is_err());
        assert!("3 days".parse::<Seconds>().is_err());
        assert!("10d".parse::<Seconds>().is_err());
    }
}
