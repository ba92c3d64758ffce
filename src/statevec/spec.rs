//! What `--circuit` names, and the circuit it builds: QuEST's QFT and the
//! seeded random circuits of circuit.rs, or a user's OpenQASM 2 file read
//! by qasm.rs. It sits above both, so that qasm.rs builds on circuit.rs and
//! nothing points back.

use super::circuit::{Circuit, MOST_GATES, mirror, qft, random};
use super::qasm;
use crate::error::{Error, Result};
use std::path::Path;

/// What `--circuit` names: qft, random[:GATES[:SEED]], or an OpenQASM 2 file.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum CircuitSpec {
    Qft,
    Random {
        gates: usize,
        seed: u64,
    },
    /// An OpenQASM 2 file, read when the plan is made.
    File {
        path: String,
    },
}

impl CircuitSpec {
    pub const DEFAULT_RANDOM_GATES: usize = 200;
    pub const DEFAULT_SEED: u64 = 1;

    pub fn parse(text: &str) -> Result<CircuitSpec> {
        let bad =
            || Error::Usage(format!("unknown circuit '{text}': use qft, random[:GATES[:SEED]] or an OpenQASM 2 file"));
        let mut parts = text.split(':');
        match parts.next() {
            Some("qft") if parts.next().is_none() => Ok(CircuitSpec::Qft),
            Some("random") => {
                let gates = match parts.next() {
                    None => Self::DEFAULT_RANDOM_GATES,
                    Some(g) => g.parse().ok().filter(|&g| (1..=MOST_GATES).contains(&g)).ok_or_else(bad)?,
                };
                let seed = match parts.next() {
                    None => Self::DEFAULT_SEED,
                    Some(s) => s.parse().map_err(|_| bad())?,
                };
                if parts.next().is_some() {
                    return Err(bad());
                }
                Ok(CircuitSpec::Random { gates, seed })
            }
            _ if text.ends_with(".qasm") || std::path::Path::new(text).is_file() => {
                Ok(CircuitSpec::File { path: text.into() })
            }
            _ => Err(bad()),
        }
    }

    /// The circuit on `n` qubits (a file's circuit is mirrored).
    pub fn build(&self, n: u32) -> Result<Circuit> {
        match self {
            CircuitSpec::Qft => Ok(qft(n)),
            CircuitSpec::Random { gates, seed } => {
                if n < 2 {
                    return Err(Error::Usage("a random circuit needs at least 2 qubits".into()));
                }
                Ok(random(n, *gates, *seed))
            }
            CircuitSpec::File { path } => {
                let c = qasm::read(Path::new(path))?;
                if c.qubits != n {
                    return Err(Error::Usage(format!(
                        "{path} is a circuit of {} qubits; give --qubits {}",
                        c.qubits, c.qubits
                    )));
                }
                Ok(mirror(c))
            }
        }
    }

    /// The qubits of a file's circuit, for a plan that was given none.
    pub fn qubits(&self) -> Result<Option<u32>> {
        match self {
            CircuitSpec::File { path } => Ok(Some(qasm::read(Path::new(path))?.qubits)),
            _ => Ok(None),
        }
    }

    /// What a file's circuit skips (`measure`, `barrier`), in one line;
    /// None for a built-in circuit or a file that skips nothing.
    pub fn skips(&self) -> Result<Option<String>> {
        match self {
            CircuitSpec::File { path } => Ok(qasm::read_noting(Path::new(path))?.1),
            _ => Ok(None),
        }
    }

    pub fn name(&self) -> String {
        match self {
            CircuitSpec::Qft => "qft".into(),
            CircuitSpec::Random { gates, seed } => format!("random:{gates}:{seed}"),
            CircuitSpec::File { path } => path.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse() {
        assert_eq!(CircuitSpec::parse("qft").unwrap(), CircuitSpec::Qft);
        assert_eq!(CircuitSpec::parse("random").unwrap(), CircuitSpec::Random { gates: 200, seed: 1 });
        assert_eq!(CircuitSpec::parse("random:50:9").unwrap(), CircuitSpec::Random { gates: 50, seed: 9 });
        for bad in ["grover", "random:0", "random:x", "random:5:6:7", "qft:3"] {
            assert_eq!(CircuitSpec::parse(bad).unwrap_err().exit_code(), 2, "{bad}");
        }
    }
}
