//! The operator's lists: switches' prefixes ([`Acl`], `sfc_acl`) and the
//! devices signals may come in on ([`IfaceList`], `sfc_ifaces`).

use super::*;

/// Longest device name (`IFNAMSIZ` - 1).
pub const IFNAME_MAX: usize = 15;
/// Devices an interface list holds at most.
pub const IFACES_MAX: usize = 8;

/// The devices a host accepts signals on (`sfc_ifaces`): the
/// fabric-facing ports. Empty (the default) accepts none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IfaceList {
    n: usize,
    names: [[u8; IFNAME_MAX + 1]; IFACES_MAX],
}

/// Why an interface list was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IfaceError {
    /// More than [`IFACES_MAX`] names.
    TooMany,
    /// Not a device name the kernel would accept (`dev_valid_name`).
    BadName,
}

impl IfaceList {
    /// The empty list (accepts nothing).
    pub const EMPTY: IfaceList = IfaceList { n: 0, names: [[0; IFNAME_MAX + 1]; IFACES_MAX] };

    /// Parses device names separated by commas (spaces and a trailing
    /// newline allowed), e.g. `eth0,eth1`. An empty string is the empty
    /// list.
    // A closure, not the `','` pattern: `Split<char>` brings a slice-index
    // panic path into the module (panic-check.sh).
    #[allow(clippy::manual_pattern_char_comparison)]
    pub fn parse(s: &str) -> Result<Self, IfaceError> {
        let mut l = IfaceList::default();
        for name in s.split(|c: char| c == ',').map(str::trim).filter(|x| !x.is_empty()) {
            let b = name.as_bytes();
            let valid = b.len() <= IFNAME_MAX
                && name != "."
                && name != ".."
                && b.iter().all(|&c| c.is_ascii_graphic() && c != b'/' && c != b':');
            if !valid {
                return Err(IfaceError::BadName);
            }
            let slot = l.names.get_mut(l.n).ok_or(IfaceError::TooMany)?;
            if let Some(d) = slot.get_mut(..b.len()) {
                d.copy_from_slice(b);
            }
            l.n = l.n.saturating_add(1);
        }
        Ok(l)
    }

    /// Whether the list is empty (accepts nothing).
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The names, as bytes.
    pub fn names(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.names.get(..self.n).unwrap_or(&[]).iter().map(|n| {
            let len = n.iter().position(|&c| c == 0).unwrap_or(n.len());
            n.get(..len).unwrap_or(&[])
        })
    }

    /// Whether `ifname` (NUL-padded, as [`Arrival::ifname`]) is listed.
    pub fn contains(&self, ifname: &[u8; IFNAME_MAX + 1]) -> bool {
        let len = ifname.iter().position(|&c| c == 0).unwrap_or(ifname.len());
        let name = ifname.get(..len).unwrap_or(&[]);
        !name.is_empty() && self.names().any(|n| n == name)
    }
}

/// Prefixes an access list holds at most.
pub const ACL_MAX: usize = 16;

/// One prefix, IPv4 as IPv4-mapped IPv6 (`::ffff:a.b.c.d`, length + 96).
/// An IPv6 prefix never has an IPv4-mapped address ([`Acl::push`]), so
/// the two families never overlap: an IPv4 prefix matches IPv4 sources
/// only, an IPv6 prefix (`::/0` too) IPv6 sources only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Prefix {
    addr: u128,
    len: u8,
}

impl Prefix {
    fn is_v4(&self) -> bool {
        is_mapped(self.addr) && self.len >= 96
    }
}

/// Whether `a` lies in `::ffff:0:0/96`.
pub(super) fn is_mapped(a: u128) -> bool {
    a >> 32 == 0xffff
}

pub(super) fn mapped(a: IpAddr) -> u128 {
    match a {
        IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

pub(super) fn mask(len: u8) -> u128 {
    128u32.checked_sub(u32::from(len)).and_then(|s| u128::MAX.checked_shl(s)).unwrap_or(0)
}

/// The switches a host accepts signals from: up to [`ACL_MAX`] IPv4 and
/// IPv6 prefixes. Empty (the default) accepts none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Acl {
    n: usize,
    p: [Prefix; ACL_MAX],
}

/// Why an access list was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AclError {
    /// More than [`ACL_MAX`] prefixes.
    TooMany,
    /// Not `ADDR/LEN` with a valid address and length.
    Syntax,
    /// Bits set beyond the prefix length (`10.1.2.3/8`).
    HostBits,
}

impl Acl {
    /// The empty list (accepts nothing).
    pub const EMPTY: Acl = Acl { n: 0, p: [Prefix { addr: 0, len: 0 }; ACL_MAX] };

    /// Parses `ADDR/LEN` prefixes separated by commas (spaces and a
    /// trailing newline allowed), e.g. `10.0.0.0/8,fd00::/8`; a bare
    /// address is a host prefix (`/32`, `/128`). An empty string is the
    /// empty list.
    // A closure, not the `','` pattern (see `IfaceList::parse`).
    #[allow(clippy::manual_pattern_char_comparison)]
    pub fn parse(s: &str) -> Result<Self, AclError> {
        let mut acl = Acl::default();
        for item in s.split(|c: char| c == ',').map(str::trim).filter(|x| !x.is_empty()) {
            let (a, l) = match item.split_once('/') {
                Some((a, l)) => (a.trim(), Some(l.trim())),
                None => (item, None),
            };
            let addr: IpAddr = a.parse().map_err(|_| AclError::Syntax)?;
            if let IpAddr::V6(v6) = addr {
                if v6.to_ipv4_mapped().is_some() {
                    // An IPv4 prefix is written as IPv4.
                    return Err(AclError::Syntax);
                }
            }
            let max = if addr.is_ipv4() { 32 } else { 128 };
            let len: u8 = match l {
                Some(l) if !l.is_empty() && l.bytes().all(|c| c.is_ascii_digit()) => {
                    l.parse().map_err(|_| AclError::Syntax)?
                }
                Some(_) => return Err(AclError::Syntax),
                None => max,
            };
            if len > max {
                return Err(AclError::Syntax);
            }
            let len = if addr.is_ipv4() { len.saturating_add(96) } else { len };
            let v = mapped(addr);
            acl.push(v, len)?;
        }
        Ok(acl)
    }

    /// Number of prefixes.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether the list is empty (accepts nothing).
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The prefixes as `(IPv6 or IPv4-mapped address, length)`.
    pub fn entries(&self) -> impl Iterator<Item = (u128, u8)> + '_ {
        self.p.get(..self.n).unwrap_or(&[]).iter().map(|p| (p.addr, p.len))
    }

    /// Adds a prefix given as [`Acl::entries`] yields it (for a copy
    /// kept in atomics): refused like [`Acl::parse`] refuses its text.
    pub fn push(&mut self, addr: u128, len: u8) -> Result<(), AclError> {
        if len > 128 {
            return Err(AclError::Syntax);
        }
        if addr & !mask(len) != 0 {
            return Err(AclError::HostBits);
        }
        if is_mapped(addr) && len < 96 {
            // An IPv6 prefix with an IPv4-mapped address: ambiguous.
            return Err(AclError::Syntax);
        }
        *self.p.get_mut(self.n).ok_or(AclError::TooMany)? = Prefix { addr, len };
        self.n = self.n.saturating_add(1);
        Ok(())
    }

    /// Whether `a` is in one of the prefixes of its own family (an
    /// IPv4-mapped IPv6 address is in none).
    pub fn contains(&self, a: IpAddr) -> bool {
        let (v, v4) = match a {
            IpAddr::V4(_) => (mapped(a), true),
            IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some() => return false,
            IpAddr::V6(v6) => (u128::from(v6), false),
        };
        self.p.get(..self.n).unwrap_or(&[]).iter().any(|p| p.is_v4() == v4 && v & mask(p.len) == p.addr)
    }
}

/// The list as `sfc_acl` reads back: `ADDR/LEN` prefixes, comma-separated
/// (what [`Acl::parse`] takes).
impl core::fmt::Display for Acl {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for (i, p) in self.p.get(..self.n).unwrap_or(&[]).iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            let v6 = Ipv6Addr::from(p.addr);
            match v6.to_ipv4_mapped() {
                Some(v4) if p.is_v4() => write!(f, "{sep}{v4}/{}", p.len.saturating_sub(96))?,
                _ => write!(f, "{sep}{v6}/{}", p.len)?,
            }
        }
        Ok(())
    }
}

/// The list as `sfc_ifaces` reads back: names, comma-separated (what
/// [`IfaceList::parse`] takes).
impl core::fmt::Display for IfaceList {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for (i, name) in self.names().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            write!(f, "{sep}{}", core::str::from_utf8(name).unwrap_or("?"))?;
        }
        Ok(())
    }
}
