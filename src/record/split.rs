//! nccl-tests' `NCCL_TESTS_SPLIT` and `NCCL_TESTS_SPLIT_MASK` as plain
//! data: the rule that gives each MPI process of a job a colour from its
//! job rank, processes of one colour sharing a communicator, as admins run
//! one communicator per rail to find the rail with the bad adapter. A split
//! run's record keeps it; `world::split` joins the communicators. The
//! spellings and their order are nccl-tests 2.19's (common.cu); what it
//! takes silently as colour 0 (a value it cannot read, a division by zero)
//! is an error here.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// How a process's job rank becomes its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rule {
    /// `rank & n` (`AND n`, `&n`, and `NCCL_TESTS_SPLIT_MASK=n`).
    And,
    /// `rank | n` (`OR n`, `|n`).
    Or,
    /// `rank % n` (`MOD n`, `%n`): n rails, rank r on rail r mod n.
    Mod,
    /// `rank / n` (`DIV n`, `/n`): groups of n consecutive ranks.
    Div,
}

/// A split as the environment asked for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Split {
    pub rule: Rule,
    pub operand: u64,
    /// The variable and its value as given, for headers and errors.
    pub asked: String,
}

const MASK: &str = "NCCL_TESTS_SPLIT_MASK";
const SPLIT: &str = "NCCL_TESTS_SPLIT";

/// The spellings of each rule, in the order nccl-tests tries them.
const SPELLINGS: [(Rule, [&str; 2]); 4] =
    [(Rule::And, ["AND", "&"]), (Rule::Or, ["OR", "|"]), (Rule::Mod, ["MOD", "%"]), (Rule::Div, ["DIV", "/"])];

impl Split {
    /// The split the environment asks for; the mask wins, as in nccl-tests.
    pub fn from_env() -> Result<Option<Split>> {
        if let Ok(v) = std::env::var(MASK) {
            return Split::mask(&v).map(Some);
        }
        match std::env::var(SPLIT) {
            Ok(v) => Split::expression(&v).map(Some),
            Err(_) => Ok(None),
        }
    }

    /// `NCCL_TESTS_SPLIT_MASK`: a hexadecimal mask, `0x` optional.
    pub fn mask(value: &str) -> Result<Split> {
        let digits = value.trim();
        let digits = digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")).unwrap_or(digits);
        let operand = u64::from_str_radix(digits, 16)
            .map_err(|_| Error::Usage(format!("{MASK}={value}: expected a hexadecimal mask, as 0x7")))?;
        Ok(Split { rule: Rule::And, operand, asked: format!("{MASK}={value}") })
    }

    /// `NCCL_TESTS_SPLIT`: `AND`, `OR`, `MOD` or `DIV` (or `&`, `|`, `%`,
    /// `/`) and a number, decimal, `0x` hexadecimal, `0b` binary or
    /// `0` octal, as `MOD 8` or `&0x7`.
    pub fn expression(value: &str) -> Result<Split> {
        let bad = |why: &str| {
            Error::Usage(format!(
                "{SPLIT}={value}: {why}; write AND, OR, MOD or DIV (or &, |, %, /) and a number, as \"MOD 8\" or \"&0x7\""
            ))
        };
        let (rule, rest) = SPELLINGS
            .iter()
            .find_map(|(rule, words)| {
                words.iter().find_map(|w| {
                    let head = value.get(..w.len())?;
                    head.eq_ignore_ascii_case(w).then(|| (*rule, &value[w.len()..]))
                })
            })
            .ok_or_else(|| bad("no rule"))?;
        let operand = number(rest.trim()).ok_or_else(|| bad("no number after the rule"))?;
        if operand == 0 && matches!(rule, Rule::Mod | Rule::Div) {
            return Err(bad("a division by zero"));
        }
        Ok(Split { rule, operand, asked: format!("{SPLIT}={value}") })
    }

    /// The colour of the process of job rank `rank`.
    pub fn colour(&self, rank: usize) -> usize {
        let (r, n) = (rank as u64, self.operand);
        let c = match self.rule {
            Rule::And => r & n,
            Rule::Or => r | n,
            Rule::Mod => r % n,
            Rule::Div => r / n,
        };
        // MPI colours are C ints.
        (c & i32::MAX as u64) as usize
    }

    /// Every colour of a job of `size` processes, with its job ranks.
    pub fn groups(&self, size: usize) -> Vec<(usize, Vec<usize>)> {
        let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
        for rank in 0..size {
            let c = self.colour(rank);
            match groups.iter_mut().find(|(g, _)| *g == c) {
                Some((_, ranks)) => ranks.push(rank),
                None => groups.push((c, vec![rank])),
            }
        }
        groups.sort_by_key(|(c, _)| *c);
        groups
    }
}

/// A number as C's strtoul with base 0 reads it, and `0b` binary.
fn number(text: &str) -> Option<u64> {
    let lower = text.to_ascii_lowercase();
    let (digits, radix) = if let Some(d) = lower.strip_prefix("0x") {
        (d, 16)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (d, 2)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (&lower[1..], 8)
    } else {
        (lower.as_str(), 10)
    };
    u64::from_str_radix(digits, radix).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn colours(s: &Split, n: usize) -> Vec<usize> {
        (0..n).map(|r| s.colour(r)).collect()
    }

    #[test]
    fn nccl_tests_spellings() {
        let mod2 = Split::expression("MOD 2").unwrap();
        assert_eq!(colours(&mod2, 4), [0, 1, 0, 1]);
        assert_eq!(Split::expression("%2").unwrap().rule, Rule::Mod);
        assert_eq!(colours(&Split::expression("div 2").unwrap(), 4), [0, 0, 1, 1]);
        assert_eq!(colours(&Split::expression("/2").unwrap(), 4), [0, 0, 1, 1]);
        assert_eq!(colours(&Split::expression("AND 0x1").unwrap(), 4), [0, 1, 0, 1]);
        assert_eq!(colours(&Split::expression("&0b10").unwrap(), 4), [0, 0, 2, 2]);
        assert_eq!(colours(&Split::expression("OR 010").unwrap(), 2), [8, 9]);
        assert_eq!(colours(&Split::expression("|  3").unwrap(), 4), [3, 3, 3, 3]);
        assert_eq!(colours(&Split::mask("0x7").unwrap(), 10), [0, 1, 2, 3, 4, 5, 6, 7, 0, 1]);
        assert_eq!(colours(&Split::mask("3").unwrap(), 4), [0, 1, 2, 3]);
        assert_eq!(mod2.groups(4), vec![(0, vec![0, 2]), (1, vec![1, 3])]);
        assert_eq!(mod2.asked, "NCCL_TESTS_SPLIT=MOD 2");
    }

    #[test]
    fn what_nccl_tests_takes_silently_is_refused() {
        for bad in ["MOD 0", "/0", "MOD", "XOR 2", "MOD two", "2", ""] {
            let e = Split::expression(bad).unwrap_err().message();
            assert!(e.starts_with(&format!("NCCL_TESTS_SPLIT={bad}:")), "{e}");
        }
        assert!(Split::mask("0xg").is_err());
        assert!(Split::mask("").is_err());
    }
}
