//! `weir group seek G --topic T --to earliest|latest|<offset>|@<epoch-ms>|<UTC datetime>`: moves a
//! group's committed offsets, like `kafka-consumer-groups --reset-offsets --execute`.
//!
//! Only an empty group (no members) may be moved: a running consumer would overwrite the new
//! offsets with its next commit. Offsets are committed through rdkafka as a client outside the
//! group (generation -1), which is what Kafka's tools do.

use std::collections::HashMap;
use std::str::FromStr;

use anyhow::{bail, Context};
use clap::Args;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::{Offset, TopicPartitionList};

use crate::client::{ConnectArgs, REQUEST_TIMEOUT};

#[derive(Args)]
pub(crate) struct SeekArgs {
    group: String,
    /// Topic whose committed offsets move.
    #[arg(long)]
    topic: String,
    /// Only these partitions (default: all of the topic).
    #[arg(long = "partition", short = 'p')]
    partitions: Vec<i32>,
    /// earliest, latest, an offset, or a time: @<epoch-ms> or YYYY-MM-DDTHH:MM:SS[.mmm]Z (the
    /// first record at or after it; latest when there is none).
    #[arg(long)]
    to: SeekTarget,
    /// Print the new offsets without committing them.
    #[arg(long)]
    dry_run: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SeekTarget {
    Earliest,
    Latest,
    Offset(i64),
    Timestamp(i64),
}

impl FromStr for SeekTarget {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "earliest" => return Ok(SeekTarget::Earliest),
            "latest" => return Ok(SeekTarget::Latest),
            _ => {}
        }
        if let Some(ms) = text.strip_prefix('@') {
            return ms
                .parse()
                .map(SeekTarget::Timestamp)
                .map_err(|_| format!("'{text}': expected @<milliseconds since the epoch>"));
        }
        if let Ok(offset) = text.parse::<i64>() {
            if offset < 0 {
                return Err(format!("offset {offset} is negative"));
            }
            return Ok(SeekTarget::Offset(offset));
        }
        parse_utc_datetime(text)
            .map(SeekTarget::Timestamp)
            .ok_or_else(|| {
                format!(
                    "'{text}': expected earliest, latest, an offset, @<epoch-ms> or \
                 YYYY-MM-DDTHH:MM:SS[.mmm]Z"
                )
            })
    }
}

/// Milliseconds since the epoch of `YYYY-MM-DDTHH:MM:SS[.mmm]Z` (UTC only).
fn parse_utc_datetime(text: &str) -> Option<i64> {
    let text = text.strip_suffix('Z')?;
    let (date, time) = text.split_once('T')?;
    let mut date_parts = date.split('-').map(|p| p.parse::<i64>().ok());
    let (year, month, day) = (
        date_parts.next()??,
        date_parts.next()??,
        date_parts.next()??,
    );
    let (clock, millis) = match time.split_once('.') {
        Some((clock, fraction)) if fraction.len() == 3 => (clock, fraction.parse::<i64>().ok()?),
        Some(_) => return None,
        None => (time, 0),
    };
    let mut clock_parts = clock.split(':').map(|p| p.parse::<i64>().ok());
    let (hour, minute, second) = (
        clock_parts.next()??,
        clock_parts.next()??,
        clock_parts.next()??,
    );
    let valid = (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && (0..24).contains(&hour)
        && (0..60).contains(&minute)
        && (0..60).contains(&second)
        && date_parts.next().is_none()
        && clock_parts.next().is_none();
    if !valid {
        return None;
    }
    // Days from 1970-01-01 in the proleptic Gregorian calendar (H. Hinnant's days_from_civil).
    let shifted_year = if month <= 2 { year - 1 } else { year };
    let era = shifted_year.div_euclid(400);
    let year_of_era = shifted_year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    Some(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis)
}

pub(crate) async fn run(connect: &ConnectArgs, args: SeekArgs) -> anyhow::Result<()> {
    let mut config = connect.client_config()?;
    config
        .set("group.id", &args.group)
        .set("enable.auto.commit", "false");
    let consumer: BaseConsumer = config.create()?;
    ensure_empty(&consumer, &args.group)?;
    let partitions = partitions_of(&consumer, &args.topic, &args.partitions)?;
    let committed = committed(&consumer, &args.topic, &partitions)?;
    let targets = target_offsets(&consumer, &args.topic, &partitions, args.to)?;
    let mut commit = TopicPartitionList::new();
    println!("TOPIC\tPARTITION\tOLD\tNEW");
    for (partition, offset) in &targets {
        let old = committed
            .get(partition)
            .map_or("-".to_string(), i64::to_string);
        println!("{}\t{partition}\t{old}\t{offset}", args.topic);
        commit.add_partition_offset(&args.topic, *partition, Offset::Offset(*offset))?;
    }
    if args.dry_run {
        println!("(dry run: nothing committed)");
        return Ok(());
    }
    // A member may have joined since the check; the broker then refuses the commit.
    ensure_empty(&consumer, &args.group)?;
    consumer
        .commit(&commit, CommitMode::Sync)
        .with_context(|| format!("committing the new offsets of group {}", args.group))?;
    Ok(())
}

fn ensure_empty(consumer: &BaseConsumer, group: &str) -> anyhow::Result<()> {
    let groups = consumer
        .fetch_group_list(Some(group), REQUEST_TIMEOUT)
        .context("DescribeGroups failed")?;
    if let Some(info) = groups.groups().first() {
        let state = info.state();
        if !matches!(state, "Empty" | "Dead" | "") || !info.members().is_empty() {
            bail!(
                "group {group} is {state} with {} member(s); offsets can only be moved while it \
                 is empty — stop its consumers first",
                info.members().len()
            );
        }
    }
    Ok(())
}

fn partitions_of(consumer: &BaseConsumer, topic: &str, wanted: &[i32]) -> anyhow::Result<Vec<i32>> {
    let metadata = consumer
        .fetch_metadata(Some(topic), REQUEST_TIMEOUT)
        .with_context(|| format!("Metadata for topic {topic} failed"))?;
    let Some(found) = metadata.topics().first().filter(|t| t.error().is_none()) else {
        bail!("topic {topic} does not exist");
    };
    let all: Vec<i32> = found.partitions().iter().map(|p| p.id()).collect();
    if wanted.is_empty() {
        return Ok(all);
    }
    if let Some(missing) = wanted.iter().find(|p| !all.contains(p)) {
        bail!("topic {topic} has no partition {missing}");
    }
    Ok(wanted.to_vec())
}

fn committed(
    consumer: &BaseConsumer,
    topic: &str,
    partitions: &[i32],
) -> anyhow::Result<HashMap<i32, i64>> {
    let mut list = TopicPartitionList::new();
    for partition in partitions {
        list.add_partition(topic, *partition);
    }
    let committed = consumer
        .committed_offsets(list, REQUEST_TIMEOUT)
        .context("OffsetFetch failed")?;
    Ok(committed
        .elements()
        .iter()
        .filter_map(|e| match e.offset() {
            Offset::Offset(offset) => Some((e.partition(), offset)),
            _ => None,
        })
        .collect())
}

fn target_offsets(
    consumer: &BaseConsumer,
    topic: &str,
    partitions: &[i32],
    target: SeekTarget,
) -> anyhow::Result<Vec<(i32, i64)>> {
    let by_time = match target {
        SeekTarget::Timestamp(ms) => {
            let mut list = TopicPartitionList::new();
            for partition in partitions {
                list.add_partition_offset(topic, *partition, Offset::Offset(ms))?;
            }
            Some(
                consumer
                    .offsets_for_times(list, REQUEST_TIMEOUT)
                    .context("ListOffsets by time failed")?,
            )
        }
        _ => None,
    };
    let mut targets = Vec::with_capacity(partitions.len());
    for &partition in partitions {
        let (low, high) = consumer
            .fetch_watermarks(topic, partition, REQUEST_TIMEOUT)
            .with_context(|| format!("ListOffsets for {topic}-{partition} failed"))?;
        let offset = match target {
            SeekTarget::Earliest => low,
            SeekTarget::Latest => high,
            // Kafka's tool clamps an offset outside the log to its nearest end.
            SeekTarget::Offset(offset) => offset.clamp(low, high),
            SeekTarget::Timestamp(_) => by_time
                .as_ref()
                .and_then(|list| list.find_partition(topic, partition))
                .and_then(|element| match element.offset() {
                    Offset::Offset(offset) => Some(offset),
                    _ => None,
                })
                .unwrap_or(high),
        };
        targets.push((partition, offset));
    }
    Ok(targets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse() {
        assert_eq!("earliest".parse(), Ok(SeekTarget::Earliest));
        assert_eq!("latest".parse(), Ok(SeekTarget::Latest));
        assert_eq!("42".parse(), Ok(SeekTarget::Offset(42)));
        assert_eq!(
            "@1700000000000".parse(),
            Ok(SeekTarget::Timestamp(1_700_000_000_000))
        );
        assert_eq!(
            "2023-11-14T22:13:20Z".parse(),
            Ok(SeekTarget::Timestamp(1_700_000_000_000))
        );
        assert_eq!(
            "1970-01-01T00:00:00.001Z".parse(),
            Ok(SeekTarget::Timestamp(1))
        );
        assert_eq!(
            "2024-02-29T00:00:00Z".parse(),
            Ok(SeekTarget::Timestamp(1_709_164_800_000))
        );
        for bad in [
            "-1",
            "soon",
            "2023-13-01T00:00:00Z",
            "2023-11-14T22:13:20",
            "@x",
        ] {
            assert!(bad.parse::<SeekTarget>().is_err(), "{bad}");
        }
    }
}
