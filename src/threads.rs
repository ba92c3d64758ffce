//! One thread per rank, or per part of a buffer: the items are handed to
//! scoped threads started together, and the results come back in order. A
//! panic in any thread is passed on to the caller. More rank threads than
//! CPUs is said once, on stderr: they take turns, and the times show it.

use std::sync::Once;

/// `f(index, item)` for every item, each on its own thread (inline for one).
pub fn each<T: Send, R: Send>(items: Vec<T>, f: impl Fn(usize, T) -> R + Sync) -> Vec<R> {
    if items.len() <= 1 {
        return items.into_iter().enumerate().map(|(i, t)| f(i, t)).collect();
    }
    std::thread::scope(|s| {
        let f = &f;
        let handles: Vec<_> = items.into_iter().enumerate().map(|(i, t)| s.spawn(move || f(i, t))).collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    })
}

/// `f(rank)` for ranks 0..n, each on its own thread.
pub fn per_rank<R: Send>(n: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    static SAID: Once = Once::new();
    if n > 1 {
        SAID.call_once(|| {
            let cpus = std::thread::available_parallelism().map_or(1, |c| c.get());
            if let Some(line) = oversubscribed(n, cpus) {
                crate::ui::say(&line);
            }
        });
    }
    each((0..n).collect(), |_, r| f(r))
}

/// The warning for `ranks` rank threads on `cpus` CPUs, when there are more
/// ranks than CPUs.
fn oversubscribed(ranks: usize, cpus: usize) -> Option<String> {
    (ranks > cpus).then(|| {
        format!(
            "qbench: warning: {ranks} host ranks run as threads on {cpus} CPU{}: they take turns, so the times measure the scheduler too (-g {cpus} or fewer, or more nodes under mpirun)",
            if cpus == 1 { "" } else { "s" }
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_order_from_distinct_threads() {
        let ids = per_rank(4, |r| (r, std::thread::current().id()));
        assert_eq!(ids.iter().map(|x| x.0).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
        assert!(ids.windows(2).all(|w| w[0].1 != w[1].1));
        let mut data = vec![0u8; 10];
        let lens = each(data.chunks_mut(4).collect(), |i, c: &mut [u8]| {
            c.fill(i as u8);
            c.len()
        });
        assert_eq!(lens, vec![4, 4, 2]);
        assert_eq!(data, vec![0, 0, 0, 0, 1, 1, 1, 1, 2, 2]);
    }

    #[test]
    fn more_ranks_than_cpus_is_a_warning() {
        assert_eq!(oversubscribed(2, 2), None);
        let line = oversubscribed(64, 2).unwrap();
        assert!(line.starts_with("qbench: warning: 64 host ranks") && line.contains("-g 2 or fewer"), "{line}");
        assert!(!line.contains('\n'));
    }
}
