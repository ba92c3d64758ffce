//! Renderings of run records: the nccl-tests table, the copy tables, JSON and CSV.

pub mod cfmt;
pub mod copy;
pub mod csv;
pub mod exchange;
pub mod json;
pub mod table;

/// A psql-style table with a header row: every summary table qbench prints.
pub fn table(header: impl IntoIterator<Item = String>, rows: Vec<Vec<String>>) -> tabled::Table {
    let mut b = tabled::builder::Builder::default();
    b.push_record(header);
    for r in rows {
        b.push_record(r);
    }
    let mut t = b.build();
    t.with(tabled::settings::Style::psql());
    t
}
