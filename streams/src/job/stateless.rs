//! A stateless job's checkpoint: each input row is transformed on its own.

use crate::decode::RecordDecoder;
use crate::encode::encode;
use crate::error::Result;
use crate::job::transaction::{Checkpoint, Destination, Outgoing};
use crate::job::{decode_input, JobConfig, JobStats, Polled, Processor};
use crate::sql::SqlTransform;

pub(super) struct Stateless<'a> {
    pub config: &'a JobConfig,
    pub decoders: &'a [RecordDecoder],
    pub transform: &'a SqlTransform,
    pub runtime: &'a tokio::runtime::Runtime,
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
        let output = self.runtime.block_on(self.transform.apply(batches))?;
        for record in encode(&output, self.config.output_format)? {
            checkpoint.records.push(Outgoing {
                destination: Destination::Output,
                key: record.key,
                value: Some(record.value),
            });
        }
        stats.records_out += output.iter().map(|b| b.num_rows() as u64).sum::<u64>();
        Ok(())
    }
}
