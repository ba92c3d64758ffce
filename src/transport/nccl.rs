//! placeholder
use super::*;
use crate::error::Error;
pub struct Nccl;
impl Nccl {
    pub fn new(_n: usize, _t: u64) -> Result<Nccl> { Err(Error::Missing("nyi".into())) }
}
impl Transport for Nccl {
    fn ranks(&self) -> &[RankInfo] { &[] }
    fn nranks(&self) -> usize { 0 }
    fn library(&self) -> Option<&LibraryInfo> { None }
    fn buffer_limit(&self) -> u64 { 0 }
    fn allocate(&mut self, _: u64) -> Result<()> { Ok(()) }
    fn fill(&mut self, _: &Op) -> Result<()> { Ok(()) }
    fn time(&mut self, _: &Op, _: u32, _: u32, _: u32) -> Result<Timing> { Ok(Timing::default()) }
    fn run_once(&mut self, _: &Op) -> Result<()> { Ok(()) }
    fn corrupt(&mut self, _: &Op, _: usize, _: u64) -> Result<()> { Ok(()) }
    fn count_wrong(&mut self, _: &Op) -> Result<u64> { Ok(0) }
}
