//! `QBENCH_CORRUPT`: a deliberate fault that proves a data check catches
//! what it must. One parser for every command; each command names the
//! faults it can apply and refuses any other (exit 2) rather than run
//! clean while the user believes a fault is active.

use crate::error::{Error, Result};

/// The variable that asks for a fault.
pub const VAR: &str = "QBENCH_CORRUPT";

/// A fault, as `QBENCH_CORRUPT` spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// `RANK[:ELEMENT]`: the collectives flip every bit of output element
    /// ELEMENT (default 0) of RANK after each validation operation.
    Element { rank: usize, index: u64 },
    /// `copy[:WORD]`: the copy tests flip 8-byte word WORD (default 0) of
    /// every destination before checking it.
    Word(u64),
    /// `partner`: the exchange pairs each rank with the wrong rank (itself
    /// when there are two).
    WrongPartner,
    /// `half`: a swap sends the half it keeps instead of the half it moves.
    WrongHalf,
    /// `rdma[:BYTE]`: qbench rdma flips byte BYTE (default 0) of every
    /// buffer this process sends from, after filling it, so that the wrong
    /// byte crosses the link.
    SourceByte(u64),
    /// `slow:RANK`: qbench check takes every figure RANK measures as a million
    /// times worse (a bandwidth divided, a time multiplied), so that its node
    /// fails while the others stay ready.
    Slow(usize),
}

/// The kinds of fault, for a command to say which it applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Element,
    Word,
    WrongPartner,
    WrongHalf,
    SourceByte,
    Slow,
}

impl Kind {
    fn spelling(self) -> &'static str {
        match self {
            Kind::Element => "RANK[:ELEMENT]",
            Kind::Word => "copy[:WORD]",
            Kind::WrongPartner => "partner",
            Kind::WrongHalf => "half",
            Kind::SourceByte => "rdma[:BYTE]",
            Kind::Slow => "slow:RANK",
        }
    }
}

impl Fault {
    pub fn kind(self) -> Kind {
        match self {
            Fault::Element { .. } => Kind::Element,
            Fault::Word(_) => Kind::Word,
            Fault::WrongPartner => Kind::WrongPartner,
            Fault::WrongHalf => Kind::WrongHalf,
            Fault::SourceByte(_) => Kind::SourceByte,
            Fault::Slow(_) => Kind::Slow,
        }
    }

    /// Parses one value of `QBENCH_CORRUPT`.
    pub fn parse(value: &str) -> Result<Fault> {
        let v = value.trim();
        let bad = || {
            Error::Usage(format!(
                "{VAR}={value}: expected RANK[:ELEMENT] (collectives), copy[:WORD] (copy), partner or half (exchange, compare), rdma[:BYTE] (rdma), slow:RANK (check)"
            ))
        };
        let number = |s: &str| s.trim().parse::<u64>().map_err(|_| bad());
        let (head, tail) = match v.split_once(':') {
            Some((h, t)) => (h.trim(), Some(t)),
            None => (v, None),
        };
        Ok(match (head, tail) {
            ("partner", None) => Fault::WrongPartner,
            ("half", None) => Fault::WrongHalf,
            ("copy", None) => Fault::Word(0),
            ("copy", Some(w)) => Fault::Word(number(w)?),
            ("rdma", None) => Fault::SourceByte(0),
            ("rdma", Some(b)) => Fault::SourceByte(number(b)?),
            ("slow", Some(r)) => Fault::Slow(number(r)? as usize),
            (r, i) if !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()) => {
                Fault::Element { rank: number(r)? as usize, index: i.map(number).transpose()?.unwrap_or(0) }
            }
            _ => return Err(bad()),
        })
    }

    /// The fault `QBENCH_CORRUPT` asks of `command`, which applies `kinds`;
    /// a fault the command cannot apply is refused.
    pub fn requested(command: &str, kinds: &[Kind]) -> Result<Option<Fault>> {
        let Ok(value) = std::env::var(VAR) else { return Ok(None) };
        let fault = Fault::parse(&value)?;
        if !kinds.contains(&fault.kind()) {
            let can: Vec<&str> = kinds.iter().map(|k| k.spelling()).collect();
            return Err(Error::Usage(format!(
                "{VAR}={value} cannot be applied by qbench {command}: {}",
                if can.is_empty() { "it injects no faults".to_string() } else { format!("use {}", can.join(" or ")) }
            )));
        }
        Ok(Some(fault))
    }

    /// What the fault does, for the run's header and the warning line.
    pub fn describe(self) -> String {
        match self {
            Fault::Element { rank, index } => {
                format!(
                    "{VAR}={rank}:{index}: element {index} of rank {rank} is flipped after each validation operation"
                )
            }
            Fault::Word(w) => format!("{VAR}=copy:{w}: word {w} of every destination is flipped before its check"),
            Fault::WrongPartner => format!("{VAR}=partner: every rank exchanges with the wrong partner"),
            Fault::WrongHalf => format!("{VAR}=half: every swap sends the half it keeps"),
            Fault::SourceByte(b) => {
                format!("{VAR}=rdma:{b}: byte {b} of every buffer this process sends from is flipped")
            }
            Fault::Slow(r) => {
                format!("{VAR}=slow:{r}: every figure rank {r} measures is taken as a million times worse")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_parses() {
        assert_eq!(Fault::parse("1:3").unwrap(), Fault::Element { rank: 1, index: 3 });
        assert_eq!(Fault::parse(" 2 ").unwrap(), Fault::Element { rank: 2, index: 0 });
        assert_eq!(Fault::parse("copy").unwrap(), Fault::Word(0));
        assert_eq!(Fault::parse("copy:12").unwrap(), Fault::Word(12));
        assert_eq!(Fault::parse("partner").unwrap(), Fault::WrongPartner);
        assert_eq!(Fault::parse("half").unwrap(), Fault::WrongHalf);
        assert_eq!(Fault::parse("rdma").unwrap(), Fault::SourceByte(0));
        assert_eq!(Fault::parse("rdma:4095").unwrap(), Fault::SourceByte(4095));
        assert_eq!(Fault::parse("slow:3").unwrap(), Fault::Slow(3));
        for bad in
            ["", "x", "1:x", "copy:", "cpy", "-1", "partner:2", ":3", "rdma:", "rdma:x", "rdmax", "slow", "slow:x"]
        {
            assert_eq!(Fault::parse(bad).unwrap_err().exit_code(), 2, "{bad}");
        }
    }

    #[test]
    fn describes_what_it_does() {
        assert!(Fault::Element { rank: 1, index: 3 }.describe().contains("element 3 of rank 1"));
        assert!(Fault::WrongHalf.describe().starts_with("QBENCH_CORRUPT=half"));
        assert!(Fault::SourceByte(7).describe().contains("byte 7 of every buffer this process sends from"));
    }
}
