//! What a transport needs to run and check a collective it does not know:
//! the element counts and offsets of each rank's buffers, the operation
//! issued through NCCL's primitives (all_reduce, all_gather, reduce_scatter,
//! broadcast, reduce, all_to_all, send, recv), and where each output element's expected
//! value comes from, in Rust and in CUDA. Each collective implements
//! [`Collective`] in one file of workload/collective/.

use crate::dtype::{DataType, RedOp};
use crate::error::Result;
use crate::pattern::Pattern;

/// Element counts of one rank's buffers for one size (nccl-tests'
/// getCollByteCount). In place, the input starts `send_inplace_offset × rank`
/// elements into the receive buffer and the output `recv_inplace_offset ×
/// rank` elements in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub send: u64,
    pub recv: u64,
    /// The count passed to the library call and printed in the table.
    pub param: u64,
    pub send_inplace_offset: u64,
    pub recv_inplace_offset: u64,
}

impl Counts {
    /// The size column and the bytes algbw is computed from.
    pub fn bytes(&self, dtype: DataType) -> u64 {
        self.send.max(self.recv) * dtype.size() as u64
    }
}

/// Where the expected value of one output element comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The reduction over all ranks of input element `index`.
    Reduced { index: u64 },
    /// Input element `index` of `rank`.
    Copied { rank: usize, index: u64 },
    /// The library makes no promise about this element.
    Unchecked,
}

/// One of a rank's two buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Buf {
    Send,
    Recv,
}

/// A place in one rank's buffers: which buffer, and the element offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    pub buffer: Buf,
    pub offset: u64,
}

impl Region {
    /// The region `elements` further on.
    pub fn at(self, elements: u64) -> Region {
        Region { offset: self.offset + elements, ..self }
    }
}

/// One rank's part of one operation, as a collective issues it.
#[derive(Debug, Clone, Copy)]
pub struct Call {
    pub rank: usize,
    pub nranks: usize,
    pub root: usize,
    /// The count of the library call (nccl-tests' count column).
    pub count: u64,
    /// The element type, for collectives whose per-peer counts are sized
    /// in bytes (alltoallv).
    pub dtype: DataType,
    /// Where the rank's input starts (its send buffer, or inside its
    /// receive buffer in place).
    pub input: Region,
    /// Where the rank's output starts.
    pub output: Region,
    /// Which of the operation's steps (see [`Collective::steps`]).
    pub step: usize,
}

/// NCCL's primitives, which every transport offers. One rank's calls for one
/// operation form a group: they complete together, sends and receives
/// between a pair of ranks matched in order.
pub trait Primitives {
    /// Block p (of `count` elements) of the input to every rank p, block q of
    /// the output from every rank q: ncclAlltoAll, or its sends and receives.
    fn all_to_all(&mut self, input: Region, output: Region, count: u64, nranks: usize) -> Result<()> {
        all_to_all_in_pairs(self, input, output, count, nranks)
    }
    fn all_reduce(&mut self, input: Region, output: Region, count: u64) -> Result<()>;
    fn all_gather(&mut self, input: Region, output: Region, count: u64) -> Result<()>;
    fn reduce_scatter(&mut self, input: Region, output: Region, count: u64) -> Result<()>;
    fn broadcast(&mut self, input: Region, output: Region, count: u64, root: usize) -> Result<()>;
    fn reduce(&mut self, input: Region, output: Region, count: u64, root: usize) -> Result<()>;
    fn send(&mut self, input: Region, count: u64, peer: usize) -> Result<()>;
    fn recv(&mut self, output: Region, count: u64, peer: usize) -> Result<()>;
    /// `count` elements from `input` to `output` of the same rank (`rank`):
    /// a device copy on the rank's stream, or a send to itself.
    fn copy(&mut self, input: Region, output: Region, count: u64, rank: usize) -> Result<()> {
        self.send(input, count, rank)?;
        self.recv(output, count, rank)
    }
    /// `count` elements of every rank's input to block r of the root's
    /// output: ncclGather, or its sends and receives.
    fn gather(&mut self, input: Region, output: Region, count: u64, root: usize, rank: usize, n: usize) -> Result<()> {
        gather_in_pairs(self, input, output, count, root, rank, n)
    }
    /// Block r of the root's input to rank r's output: ncclScatter, or its
    /// sends and receives.
    fn scatter(&mut self, input: Region, output: Region, count: u64, root: usize, rank: usize, n: usize) -> Result<()> {
        scatter_in_pairs(self, input, output, count, root, rank, n)
    }
}

/// A gather as a send to the root and, on the root, a receive from every rank.
pub fn gather_in_pairs<P: Primitives + ?Sized>(
    p: &mut P,
    input: Region,
    output: Region,
    count: u64,
    root: usize,
    rank: usize,
    nranks: usize,
) -> Result<()> {
    p.send(input, count, root)?;
    if rank == root {
        (0..nranks).try_for_each(|r| p.recv(output.at(r as u64 * count), count, r))?;
    }
    Ok(())
}

/// A scatter as, on the root, a send to every rank, and a receive from the root.
pub fn scatter_in_pairs<P: Primitives + ?Sized>(
    p: &mut P,
    input: Region,
    output: Region,
    count: u64,
    root: usize,
    rank: usize,
    nranks: usize,
) -> Result<()> {
    if rank == root {
        (0..nranks).try_for_each(|r| p.send(input.at(r as u64 * count), count, r))?;
    }
    p.recv(output, count, root)
}

/// An all-to-all as a send and a receive to and from every rank.
pub fn all_to_all_in_pairs<P: Primitives + ?Sized>(
    p: &mut P,
    input: Region,
    output: Region,
    count: u64,
    nranks: usize,
) -> Result<()> {
    for peer in 0..nranks {
        let block = peer as u64 * count;
        p.send(input.at(block), count, peer)?;
        p.recv(output.at(block), count, peer)?;
    }
    Ok(())
}

/// A collective as a transport runs and checks it.
pub trait Collective: Sync {
    /// NCCL's and nccl-tests' name, e.g. "all_reduce".
    fn name(&self) -> &'static str;
    /// Issues one rank's part of one step of one operation.
    fn issue(&self, p: &mut dyn Primitives, c: &Call) -> Result<()>;
    /// The steps of one operation over `nranks` ranks, each a group of its
    /// own that starts when the one before has completed (a step reads what
    /// the one before delivered); most collectives are one group.
    fn steps(&self, _nranks: usize) -> usize {
        1
    }
    /// Where output element `j` (of type `dtype`) of `rank` comes from.
    fn source(&self, c: &Counts, dtype: DataType, rank: usize, root: usize, nranks: usize, j: u64) -> Source;
    /// How many of `rank`'s output elements hold data (the ones after them
    /// are unchecked): the whole receive count but where ranks receive
    /// different amounts.
    fn received(&self, c: &Counts, _dtype: DataType, _rank: usize, _nranks: usize) -> u64 {
        c.recv
    }
    /// The same rule in CUDA: statements that return the expected value of
    /// output element `j` (kernels/pattern.cu's `expected`, where `c` holds
    /// the check's rank, nranks, root, `blk` the count and `E::storage`
    /// the element type).
    fn source_cu(&self) -> &'static str;
}

/// One collective operation as launched: what, on which data, where.
#[derive(Clone, Copy)]
pub struct Op {
    pub collective: &'static dyn Collective,
    pub dtype: DataType,
    /// The reduction; `Sum` for collectives that do not reduce.
    pub redop: RedOp,
    pub root: usize,
    pub counts: Counts,
    pub in_place: bool,
    /// Operations per group launch (nccl-tests -m).
    pub agg: u32,
    pub pattern: Pattern,
}

impl Op {
    /// Element offset of `rank`'s input: in the send buffer, or in the
    /// receive buffer when in place.
    pub fn input_offset(&self, rank: usize) -> u64 {
        if self.in_place { self.counts.send_inplace_offset * rank as u64 } else { 0 }
    }

    /// Element offset of `rank`'s output in its receive buffer.
    pub fn output_offset(&self, rank: usize) -> u64 {
        if self.in_place { self.counts.recv_inplace_offset * rank as u64 } else { 0 }
    }

    /// Whether `rank`'s output is defined by the collective at all.
    pub fn checks_rank(&self, rank: usize, nranks: usize) -> bool {
        self.counts.recv > 0
            && self.collective.source(&self.counts, self.dtype, rank, self.root, nranks, 0) != Source::Unchecked
    }

    /// `rank`'s part of step `step` of the operation.
    pub fn call(&self, rank: usize, nranks: usize, step: usize) -> Call {
        let input = if self.in_place { Buf::Recv } else { Buf::Send };
        Call {
            rank,
            nranks,
            root: self.root,
            count: self.counts.param,
            dtype: self.dtype,
            input: Region { buffer: input, offset: self.input_offset(rank) },
            output: Region { buffer: Buf::Recv, offset: self.output_offset(rank) },
            step,
        }
    }

    /// How many of `rank`'s output elements are checked.
    pub fn received(&self, rank: usize, nranks: usize) -> u64 {
        self.collective.received(&self.counts, self.dtype, rank, nranks)
    }

    /// The expected value of `rank`'s output element `j`; None when unchecked.
    pub fn expected<T: crate::dtype::Element>(&self, keys: &[u64], rank: usize, nranks: usize, j: u64) -> Option<T> {
        let p = &self.pattern;
        Some(match self.collective.source(&self.counts, self.dtype, rank, self.root, nranks, j) {
            Source::Reduced { index } => p.reduced(keys, self.redop, index),
            Source::Copied { rank, index } => p.element(keys, rank, index),
            Source::Unchecked => return None,
        })
    }
}
