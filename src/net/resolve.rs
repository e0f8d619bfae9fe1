//! Name resolution for the proxy and the check of every address it would connect
//! to.
//!
//! The proxy connects only to a `SocketAddr` that passed [`check_addr`], and never
//! re-resolves between the check and the connect, so a rebinding resolver cannot
//! swap the address in between: the address checked is the address connected to.
//! A name with *any* refused address among its answers is refused as a whole: a
//! public name that also answers 10.0.0.1 is a rebinding or split-horizon setup,
//! not something a package index does.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Why an address is refused; the `Display` text goes into the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddrClass {
    Unspecified,
    Loopback,
    Private,
    LinkLocal,
    Metadata,
    SharedCgnat,
    Multicast,
    Broadcast,
    Reserved,
    Documentation,
    UniqueLocal,
    /// IPv6 forms that carry or tunnel an IPv4 address we cannot vouch for.
    Tunnel,
}

impl std::fmt::Display for AddrClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AddrClass::Unspecified => "unspecified",
            AddrClass::Loopback => "loopback",
            AddrClass::Private => "private",
            AddrClass::LinkLocal => "link-local",
            AddrClass::Metadata => "cloud metadata",
            AddrClass::SharedCgnat => "shared/CGNAT",
            AddrClass::Multicast => "multicast",
            AddrClass::Broadcast => "broadcast",
            AddrClass::Reserved => "reserved",
            AddrClass::Documentation => "documentation",
            AddrClass::UniqueLocal => "unique-local",
            AddrClass::Tunnel => "IPv4-embedding/tunnel",
        })
    }
}

const METADATA_V4: Ipv4Addr = Ipv4Addr::new(169, 254, 169, 254);
const METADATA_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254);

/// `Ok(())` for a globally routable unicast address, else the class refused.
pub fn check_addr(ip: IpAddr) -> Result<(), AddrClass> {
    match ip {
        IpAddr::V4(v4) => check_v4(v4),
        IpAddr::V6(v6) => check_v6(v6),
    }
}

fn check_v4(ip: Ipv4Addr) -> Result<(), AddrClass> {
    let [a, b, c, _] = ip.octets();
    if ip == METADATA_V4 {
        return Err(AddrClass::Metadata);
    }
    match (a, b, c) {
        (0, _, _) => Err(AddrClass::Unspecified),
        (127, _, _) => Err(AddrClass::Loopback),
        (10, _, _) => Err(AddrClass::Private),
        (172, 16..=31, _) => Err(AddrClass::Private),
        (192, 168, _) => Err(AddrClass::Private),
        (169, 254, _) => Err(AddrClass::LinkLocal),
        (100, 64..=127, _) => Err(AddrClass::SharedCgnat),
        (192, 0, 0) => Err(AddrClass::Reserved),
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => Err(AddrClass::Documentation),
        (198, 18..=19, _) => Err(AddrClass::Reserved),
        (224..=239, _, _) => Err(AddrClass::Multicast),
        (255, 255, 255) if ip == Ipv4Addr::BROADCAST => Err(AddrClass::Broadcast),
        (240..=255, _, _) => Err(AddrClass::Reserved),
        _ => Ok(()),
    }
}

fn check_v6(ip: Ipv6Addr) -> Result<(), AddrClass> {
    if ip == METADATA_V6 {
        return Err(AddrClass::Metadata);
    }
    if ip.is_unspecified() {
        return Err(AddrClass::Unspecified);
    }
    if ip.is_loopback() {
        return Err(AddrClass::Loopback);
    }
    let seg = ip.segments();
    // ::ffff:a.b.c.d (mapped) is judged as the IPv4 address it is: a socket
    // connecting to ::ffff:127.0.0.1 reaches 127.0.0.1.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return check_v4(v4);
    }
    // ::a.b.c.d (deprecated IPv4-compatible) and ::ffff:0:a.b.c.d (SIIT):
    // nothing legitimate uses them; refuse rather than guess the routing.
    if seg[..5] == [0, 0, 0, 0, 0] || seg[..6] == [0, 0, 0, 0, 0xffff, 0] {
        return Err(AddrClass::Tunnel);
    }
    match seg[0] {
        0xff00..=0xffff => return Err(AddrClass::Multicast),
        0xfe80..=0xfebf => return Err(AddrClass::LinkLocal),
        0xfec0..=0xfeff => return Err(AddrClass::Private), // deprecated site-local
        0xfc00..=0xfdff => return Err(AddrClass::UniqueLocal),
        _ => {}
    }
    // NAT64 (64:ff9b::/96 and the local-use 64:ff9b:1::/48) and 6to4 (2002::/16)
    // put an IPv4 address inside; Teredo (2001::/32) obfuscates one. A gateway
    // would forward them to that IPv4 address, which may be private.
    if (seg[0] == 0x64 && seg[1] == 0xff9b) || seg[0] == 0x2002 || (seg[0] == 0x2001 && seg[1] == 0)
    {
        return Err(AddrClass::Tunnel);
    }
    if seg[0] == 0x2001 && seg[1] == 0x0db8 {
        return Err(AddrClass::Documentation);
    }
    // Discard-only 100::/64, and everything outside global unicast 2000::/3.
    if (seg[0] == 0x0100 && seg[1..4] == [0, 0, 0]) || !(0x2000..=0x3fff).contains(&seg[0]) {
        return Err(AddrClass::Reserved);
    }
    Ok(())
}

/// Why a name could not be turned into an address to connect to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolveError {
    /// The resolver failed or returned nothing.
    Lookup(String),
    /// One of the answers is an address we never connect to.
    Refused { addr: IpAddr, class: AddrClass },
}

impl std::fmt::Display for ResolveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResolveError::Lookup(why) => write!(f, "resolution failed: {why}"),
            ResolveError::Refused { addr, class } => {
                write!(f, "resolves to refused address {addr} ({class})")
            }
        }
    }
}

/// Resolves host names for the proxy.
///
/// `test_map` is the config's `test_resolve` (TEST ONLY): a mapped name gets its
/// mapped address instead of DNS, and for such a name a *loopback* address is
/// accepted, so tests can stand a package index on 127.0.0.1 under a made-up
/// name. Nothing else is lifted: a name mapped to 10.0.0.1, 169.254.169.254 or
/// fd00:ec2::254 is still refused, which keeps the setting from ever opening the
/// metadata service or the host's LAN, and lets tests check those refusals on a
/// real code path without ever sending a packet there.
#[derive(Debug, Clone, Default)]
pub struct Resolver {
    test_map: BTreeMap<String, IpAddr>,
}

impl Resolver {
    pub fn new(test_map: &BTreeMap<String, IpAddr>) -> Self {
        let test_map = test_map
            .iter()
            .map(|(k, v)| (super::allowlist::normalize_host(k), *v))
            .collect();
        Resolver { test_map }
    }

    /// All addresses for `host:port`, each checked; refuses if any is refused.
    pub async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, ResolveError> {
        if let Some(ip) = self.test_map.get(host) {
            let addr = SocketAddr::new(*ip, port);
            return match check_addr(*ip) {
                Ok(()) => Ok(vec![addr]),
                Err(AddrClass::Loopback) => Ok(vec![addr]),
                Err(class) => Err(ResolveError::Refused { addr: *ip, class }),
            };
        }
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| ResolveError::Lookup(e.to_string()))?
            .collect();
        check_all(addrs)
    }
}

/// The rule for real DNS answers: non-empty, and every address allowed.
pub fn check_all(addrs: Vec<SocketAddr>) -> Result<Vec<SocketAddr>, ResolveError> {
    if addrs.is_empty() {
        return Err(ResolveError::Lookup("no addresses".into()));
    }
    for a in &addrs {
        check_addr(a.ip()).map_err(|class| ResolveError::Refused {
            addr: a.ip(),
            class,
        })?;
    }
    Ok(addrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(s: &str) -> Result<(), AddrClass> {
        check_addr(s.parse().unwrap())
    }

    #[test]
    fn ipv4_classes() {
        for (a, want) in [
            ("0.0.0.0", AddrClass::Unspecified),
            ("0.1.2.3", AddrClass::Unspecified),
            ("127.0.0.1", AddrClass::Loopback),
            ("127.255.0.9", AddrClass::Loopback),
            ("10.0.0.1", AddrClass::Private),
            ("172.16.0.1", AddrClass::Private),
            ("172.31.255.255", AddrClass::Private),
            ("192.168.1.1", AddrClass::Private),
            ("169.254.169.254", AddrClass::Metadata),
            ("169.254.1.1", AddrClass::LinkLocal),
            ("100.64.0.1", AddrClass::SharedCgnat),
            ("100.127.255.255", AddrClass::SharedCgnat),
            ("224.0.0.1", AddrClass::Multicast),
            ("239.255.255.250", AddrClass::Multicast),
            ("255.255.255.255", AddrClass::Broadcast),
            ("240.0.0.1", AddrClass::Reserved),
            ("192.0.2.1", AddrClass::Documentation),
            ("198.18.0.1", AddrClass::Reserved),
        ] {
            assert_eq!(v4(a), Err(want), "{a}");
        }
        for a in [
            "1.1.1.1",
            "151.101.0.223",
            "172.15.0.1",
            "172.32.0.1",
            "100.63.0.1",
            "100.128.0.1",
            "169.253.1.1",
        ] {
            assert_eq!(v4(a), Ok(()), "{a}");
        }
    }

    #[test]
    fn ipv6_classes() {
        for (a, want) in [
            ("::", AddrClass::Unspecified),
            ("::1", AddrClass::Loopback),
            ("::ffff:127.0.0.1", AddrClass::Loopback),
            ("::ffff:169.254.169.254", AddrClass::Metadata),
            ("::ffff:10.1.2.3", AddrClass::Private),
            ("::127.0.0.1", AddrClass::Tunnel),
            ("::ffff:0:7f00:1", AddrClass::Tunnel),
            ("fd00:ec2::254", AddrClass::Metadata),
            ("fd12::1", AddrClass::UniqueLocal),
            ("fc00::1", AddrClass::UniqueLocal),
            ("fe80::1", AddrClass::LinkLocal),
            ("fec0::1", AddrClass::Private),
            ("ff02::1", AddrClass::Multicast),
            ("64:ff9b::a9fe:a9fe", AddrClass::Tunnel),
            ("2002:7f00:1::1", AddrClass::Tunnel),
            ("2001:0:4136:e378::1", AddrClass::Tunnel),
            ("2001:db8::1", AddrClass::Documentation),
            ("100::1", AddrClass::Reserved),
            ("4000::1", AddrClass::Reserved),
        ] {
            assert_eq!(v4(a), Err(want), "{a}");
        }
        for a in ["2a04:4e42::223", "2606:4700::1111", "::ffff:151.101.0.223"] {
            assert_eq!(v4(a), Ok(()), "{a}");
        }
    }

    #[test]
    fn any_bad_answer_refuses_the_name() {
        let good: SocketAddr = "151.101.0.223:443".parse().unwrap();
        let bad: SocketAddr = "10.0.0.5:443".parse().unwrap();
        assert_eq!(check_all(vec![good]), Ok(vec![good]));
        assert!(matches!(
            check_all(vec![good, bad]),
            Err(ResolveError::Refused {
                class: AddrClass::Private,
                ..
            })
        ));
        assert!(matches!(check_all(vec![]), Err(ResolveError::Lookup(_))));
    }

    #[tokio::test]
    async fn test_map_lifts_only_loopback() {
        let mut m = BTreeMap::new();
        m.insert("Pypi.Test".to_string(), "127.0.0.1".parse().unwrap());
        m.insert("meta.test".to_string(), "169.254.169.254".parse().unwrap());
        m.insert("lan.test".to_string(), "10.0.0.1".parse().unwrap());
        m.insert("meta6.test".to_string(), "fd00:ec2::254".parse().unwrap());
        let r = Resolver::new(&m);
        assert_eq!(
            r.resolve("pypi.test", 81).await,
            Ok(vec!["127.0.0.1:81".parse().unwrap()])
        );
        for (name, class) in [
            ("meta.test", AddrClass::Metadata),
            ("lan.test", AddrClass::Private),
            ("meta6.test", AddrClass::Metadata),
        ] {
            match r.resolve(name, 443).await {
                Err(ResolveError::Refused { class: c, .. }) => assert_eq!(c, class, "{name}"),
                other => panic!("{name}: {other:?}"),
            }
        }
    }

    #[tokio::test]
    async fn real_dns_for_localhost_is_refused() {
        // `localhost` comes from /etc/hosts through the real resolver path, not
        // from the test map, so this is the production check on a loopback answer.
        let r = Resolver::new(&BTreeMap::new());
        match r.resolve("localhost", 443).await {
            Err(ResolveError::Refused {
                class: AddrClass::Loopback,
                ..
            }) => {}
            other => panic!("localhost: {other:?}"),
        }
    }
}
