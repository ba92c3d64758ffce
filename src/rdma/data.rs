//! The bytes an RDMA test moves: each source buffer holds a seeded pattern
//! that depends on the run's seed, the side that sends and the queue pair,
//! so the receiving side knows every byte it must find, and a byte from the
//! wrong queue pair, side or offset is caught as surely as a flipped one.

use crate::pattern::{bits, rank_key};
use crate::record::rdma::DataCheck;

/// Which side of a connection a buffer belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The side that initiates: the client, or the even rank of a pair.
    Client,
    /// The side that waits: the server, or the odd rank of a pair.
    Server,
}

impl Side {
    pub fn peer(self) -> Side {
        match self {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        }
    }
}

/// The key of the pattern that `origin` sends on queue pair `qp`.
pub fn key(seed: u64, origin: Side, qp: u32) -> u64 {
    let stream = match origin {
        Side::Client => 0usize,
        Side::Server => 1usize << 32,
    };
    rank_key(seed, stream + qp as usize)
}

/// Bytes 8 × index .. 8 × index + 8 of the pattern of `key`.
fn word(key: u64, index: usize) -> [u8; 8] {
    bits(key, index as u64).to_le_bytes()
}

/// Byte `offset` of the pattern of `key`.
pub fn byte(key: u64, offset: usize) -> u8 {
    word(key, offset / 8)[offset % 8]
}

/// Fills `buf` with the pattern of `key` (byte i of the buffer is byte i of the pattern).
pub fn fill(buf: &mut [u8], key: u64) {
    for (i, chunk) in buf.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&word(key, i)[..chunk.len()]);
    }
}

/// Fills `buf` with the complement of the pattern of `key`: every byte is
/// wrong until the peer's data lands on it.
pub fn poison(buf: &mut [u8], key: u64) {
    for (i, chunk) in buf.chunks_mut(8).enumerate() {
        let w = word(key, i);
        for (b, p) in chunk.iter_mut().zip(w) {
            *b = !p;
        }
    }
}

/// Compares `buf` with the pattern of `key`, byte by byte.
pub fn check(buf: &[u8], key: u64) -> DataCheck {
    let mut c = DataCheck { checked_bytes: buf.len() as u64, ..DataCheck::default() };
    for (i, chunk) in buf.chunks(8).enumerate() {
        let w = word(key, i);
        if chunk == &w[..chunk.len()] {
            continue;
        }
        for (j, (a, b)) in chunk.iter().zip(w).enumerate() {
            if *a != b {
                c.wrong_bytes += 1;
                c.first_wrong.get_or_insert((i * 8 + j) as u64);
            }
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filled_buffers_check_clean_and_flips_are_found() {
        let k = key(5, Side::Client, 3);
        let mut buf = vec![0u8; 1000];
        fill(&mut buf, k);
        assert_eq!(check(&buf, k), DataCheck { checked_bytes: 1000, wrong_bytes: 0, first_wrong: None });
        buf[997] ^= 1;
        buf[13] ^= 0x80;
        assert_eq!(check(&buf, k), DataCheck { checked_bytes: 1000, wrong_bytes: 2, first_wrong: Some(13) });
    }

    #[test]
    fn poison_is_wrong_everywhere_and_keys_differ() {
        let k = key(5, Side::Server, 0);
        let mut buf = vec![0u8; 64];
        poison(&mut buf, k);
        assert_eq!(check(&buf, k).wrong_bytes, 64);
        fill(&mut buf, k);
        assert!(check(&buf, key(5, Side::Client, 0)).wrong_bytes > 50);
        assert!(check(&buf, key(5, Side::Server, 1)).wrong_bytes > 50);
        assert!(check(&buf, key(6, Side::Server, 0)).wrong_bytes > 50);
    }

    #[test]
    fn a_prefix_of_the_pattern_is_the_pattern() {
        let k = key(1, Side::Client, 0);
        let mut long = vec![0u8; 4096];
        fill(&mut long, k);
        assert_eq!(check(&long[..3], k).wrong_bytes, 0);
        assert!((0..4096).all(|i| byte(k, i) == long[i]));
    }
}
