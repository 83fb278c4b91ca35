//! Records in and out: consumed records → Arrow batches ([`decode`]), result rows → output
//! records ([`encode`]), the timestamp an output record keeps ([`record_time`]), and reading a
//! topic's partitions up to their end ([`topic_reader`]: ad-hoc queries, schema samples, state
//! restores). Nothing here plans queries or keeps state.

pub mod decode;
pub mod encode;
pub mod record_time;
pub mod topic_reader;
