//! A stateless job's checkpoint: each input row is transformed on its own (joins looking it
//! up in declared tables, brought up to date first).

use crate::error::Result;
use crate::io::decode::RecordDecoder;
use crate::io::encode::encode;
use crate::io::topic_reader;
use crate::job::input::decode_input;
use crate::job::poll::Polled;
use crate::job::processor::Processor;
use crate::job::stats::JobStats;
use crate::job::transaction::{Checkpoint, Destination, Outgoing};
use crate::job::JobConfig;
use crate::join::table::{TableFeed, TableState};
use crate::sql::SqlTransform;

pub(super) struct Stateless<'a> {
    pub config: &'a JobConfig,
    pub decoders: &'a [RecordDecoder],
    pub transform: &'a SqlTransform,
    pub runtime: &'a tokio::runtime::Runtime,
    pub tables: Tables,
}

/// The declared tables' states and the readers that feed them.
pub(super) struct Tables {
    states: Vec<TableState>,
    feeds: Vec<TableFeed>,
}

impl Tables {
    pub(super) fn open(config: &JobConfig, states: Vec<TableState>) -> Result<Self> {
        let mut feeds = Vec::new();
        for (_, topic) in &config.tables {
            feeds.push(TableFeed::new(
                topic_reader::consumer(&config.client)?,
                topic,
            )?);
        }
        Ok(Tables { states, feeds })
    }

    /// Reads every table up to its end now.
    fn catch_up(&mut self) -> Result<()> {
        for (feed, state) in self.feeds.iter_mut().zip(&mut self.states) {
            feed.catch_up(state)?;
        }
        Ok(())
    }
}

impl Processor for Stateless<'_> {
    fn reload(&mut self, _consumer: &crate::job::consumer::JobConsumer) -> Result<()> {
        Ok(())
    }

    fn checkpoint(
        &mut self,
        polled: &Polled,
        checkpoint: &mut Checkpoint,
        stats: &mut JobStats,
    ) -> Result<()> {
        let mut batches = Vec::new();
        for (decoder, (_, records)) in self.decoders.iter().zip(&polled.inputs) {
            batches.push(decode_input(
                self.config,
                decoder,
                records,
                checkpoint,
                stats,
            )?);
        }
        self.tables.catch_up()?;
        let (output, times) = self
            .runtime
            .block_on(self.transform.apply_timed(batches, &self.tables.states))?;
        let records = encode(&output, self.config.output_format)?;
        let times = times.unwrap_or_default();
        for (index, record) in records.into_iter().enumerate() {
            checkpoint.records.push(Outgoing {
                destination: Destination::Output,
                key: record.key,
                value: Some(record.value),
                // The input record's (`crate::io::record_time`); the producer's clock otherwise.
                timestamp_ms: times.get(index).copied().flatten(),
            });
        }
        stats.records_out += output.iter().map(|b| b.num_rows() as u64).sum::<u64>();
        Ok(())
    }
}
