//! Nexmark events — the standard streaming benchmark's online auction: people register, put
//! items up for auction, and bid on them (Tucker et al., "NEXMark – A Benchmark for Queries over
//! Data Streams"; the shape of Apache Beam's and Flink's generators). Every event is a function
//! of the seed and its number, so a run can be repeated exactly and an oracle recompute it.
//!
//! Of every 50 events, one is a person, three are auctions and 46 are bids, in that order.
//! Ids start at 1000; an auction's seller is a person already registered, a bid's auction one
//! already opened and its bidder a person already registered — half the time one of the most
//! recent ("hot"), otherwise any of the last thousand. Event times advance evenly from
//! `base_time_ms`, `event_interval_us` apart. Values are flat JSON objects with Nexmark's field
//! names (`dateTime` and `expires` in epoch milliseconds).

use serde::Serialize;

pub const PROPORTION_TOTAL: u64 = 50;
const PERSON_PROPORTION: u64 = 1;
const AUCTION_PROPORTION: u64 = 3;
pub const FIRST_ID: i64 = 1000;
/// How many of the newest persons and auctions are "hot".
const HOT: u64 = 4;
/// How far back a cold pick reaches.
const RECENT: u64 = 1000;

const FIRST_NAMES: &[&str] = &[
    "Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter",
];
const LAST_NAMES: &[&str] = &[
    "Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris",
];
const STATES: &[&str] = &["AZ", "CA", "ID", "OR", "WA", "WY"];
const CITIES: &[&str] = &[
    "Phoenix",
    "Los Angeles",
    "San Francisco",
    "Boise",
    "Portland",
    "Bend",
    "Redmond",
    "Seattle",
    "Kent",
    "Cheyenne",
];
const CHANNELS: &[&str] = &["Google", "Facebook", "Baidu", "Apple"];

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Person {
    pub id: i64,
    pub name: String,
    pub email_address: String,
    pub credit_card: String,
    pub city: String,
    pub state: String,
    pub date_time: i64,
    pub extra: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Auction {
    pub id: i64,
    pub item_name: String,
    pub description: String,
    pub initial_bid: i64,
    pub reserve: i64,
    pub date_time: i64,
    pub expires: i64,
    pub seller: i64,
    pub category: i64,
    pub extra: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Bid {
    pub auction: i64,
    pub bidder: i64,
    pub price: i64,
    pub channel: String,
    pub url: String,
    pub date_time: i64,
    pub extra: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Person(Person),
    Auction(Auction),
    Bid(Bid),
}

impl Event {
    pub fn date_time(&self) -> i64 {
        match self {
            Event::Person(p) => p.date_time,
            Event::Auction(a) => a.date_time,
            Event::Bid(b) => b.date_time,
        }
    }

    /// The value as JSON.
    pub fn json(&self) -> String {
        let json = match self {
            Event::Person(p) => serde_json::to_string(p),
            Event::Auction(a) => serde_json::to_string(a),
            Event::Bid(b) => serde_json::to_string(b),
        };
        json.unwrap_or_default()
    }
}

/// Events for one seed; `event(n)` is always the same event.
#[derive(Debug, Clone, Copy)]
pub struct NexmarkGenerator {
    pub seed: u64,
    pub base_time_ms: i64,
    /// Event time between two events, in microseconds.
    pub event_interval_us: i64,
}

/// SplitMix64.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl NexmarkGenerator {
    pub fn new(seed: u64) -> Self {
        NexmarkGenerator {
            seed,
            base_time_ms: 1_700_000_000_000,
            event_interval_us: 100,
        }
    }

    pub fn time_ms(&self, n: u64) -> i64 {
        self.base_time_ms + (n as i64).saturating_mul(self.event_interval_us) / 1000
    }

    /// Persons registered up to event `n`, itself included.
    fn persons_until(n: u64) -> u64 {
        let within = (n % PROPORTION_TOTAL + 1).min(PERSON_PROPORTION);
        n / PROPORTION_TOTAL * PERSON_PROPORTION + within
    }

    /// Auctions opened up to event `n`, itself included.
    fn auctions_until(n: u64) -> u64 {
        let within = (n % PROPORTION_TOTAL + 1).saturating_sub(PERSON_PROPORTION);
        n / PROPORTION_TOTAL * AUCTION_PROPORTION + within.min(AUCTION_PROPORTION)
    }

    pub fn event(&self, n: u64) -> Event {
        let r = |salt: u64| mix(self.seed ^ mix(n.wrapping_mul(64).wrapping_add(salt)));
        let time = self.time_ms(n);
        let extra = |salt: u64, len: u64| -> String {
            let len = len + r(salt) % 8;
            (0..len)
                .map(|i| char::from(b'a' + (mix(r(salt) ^ i) % 26) as u8))
                .collect()
        };
        let rem = n % PROPORTION_TOTAL;
        if rem < PERSON_PROPORTION {
            let id = FIRST_ID + (n / PROPORTION_TOTAL) as i64;
            let first = FIRST_NAMES[(r(1) % FIRST_NAMES.len() as u64) as usize];
            let last = LAST_NAMES[(r(2) % LAST_NAMES.len() as u64) as usize];
            return Event::Person(Person {
                id,
                name: format!("{first} {last}"),
                email_address: format!("{}@{}.com", extra(3, 7), extra(4, 5)),
                credit_card: format!(
                    "{:04} {:04} {:04} {:04}",
                    r(5) % 10_000,
                    r(6) % 10_000,
                    r(7) % 10_000,
                    r(8) % 10_000
                ),
                city: CITIES[(r(9) % CITIES.len() as u64) as usize].into(),
                state: STATES[(r(10) % STATES.len() as u64) as usize].into(),
                date_time: time,
                extra: extra(11, 20),
            });
        }
        let persons = Self::persons_until(n);
        let pick = |salt: u64, count: u64| -> u64 {
            // Half the time one of the newest, else any of the recent ones.
            let span = if r(salt) % 2 == 0 { HOT } else { RECENT };
            count - 1 - r(salt + 1) % span.min(count)
        };
        if rem < PERSON_PROPORTION + AUCTION_PROPORTION {
            let id = FIRST_ID + Self::auctions_until(n) as i64 - 1;
            let initial_bid = 100 + (r(12) % 10_000) as i64;
            return Event::Auction(Auction {
                id,
                item_name: extra(13, 8),
                description: extra(14, 20),
                initial_bid,
                reserve: initial_bid + (r(15) % 10_000) as i64,
                date_time: time,
                expires: time + 2_000 + (r(16) % 8_000) as i64,
                seller: FIRST_ID + pick(17, persons) as i64,
                category: 10 + (r(19) % 5) as i64,
                extra: extra(20, 20),
            });
        }
        let auctions = Self::auctions_until(n);
        let channel = r(21) % CHANNELS.len() as u64;
        Event::Bid(Bid {
            auction: FIRST_ID + pick(22, auctions) as i64,
            bidder: FIRST_ID + pick(24, persons) as i64,
            price: 100 + (r(26) % 1_000_000) as i64,
            channel: CHANNELS[channel as usize].into(),
            url: format!(
                "https://www.nexmark.com/{}/item.htm?query=1&channel_id={channel}",
                extra(27, 5)
            ),
            date_time: time,
            extra: extra(28, 20),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifty_events_are_one_person_three_auctions_and_46_bids_referring_back() {
        let generator = NexmarkGenerator::new(7);
        let (mut persons, mut auctions, mut bids) = (Vec::new(), Vec::new(), 0);
        for n in 0..5_000 {
            match generator.event(n) {
                Event::Person(p) => persons.push(p.id),
                Event::Auction(a) => {
                    assert!(persons.contains(&a.seller), "seller {} exists", a.seller);
                    assert!(a.reserve >= a.initial_bid && a.expires > a.date_time);
                    auctions.push(a.id);
                }
                Event::Bid(b) => {
                    assert!(
                        auctions.contains(&b.auction),
                        "auction {} exists",
                        b.auction
                    );
                    assert!(persons.contains(&b.bidder), "bidder {} exists", b.bidder);
                    bids += 1;
                }
            }
            assert_eq!(generator.event(n), generator.event(n), "a function of n");
        }
        assert_eq!((persons.len(), auctions.len(), bids), (100, 300, 4_600));
        // Ids are consecutive from 1000.
        assert_eq!(persons, (1000..1100).collect::<Vec<_>>());
        assert_eq!(auctions, (1000..1300).collect::<Vec<_>>());
        assert_ne!(NexmarkGenerator::new(8).event(7), generator.event(7));
    }

    #[test]
    fn values_are_flat_json_with_nexmark_names() {
        let generator = NexmarkGenerator::new(1);
        let bid: serde_json::Value = serde_json::from_str(&generator.event(10).json()).unwrap();
        for field in [
            "auction", "bidder", "price", "channel", "url", "dateTime", "extra",
        ] {
            assert!(bid.get(field).is_some(), "{field} in {bid}");
        }
        let person: serde_json::Value = serde_json::from_str(&generator.event(0).json()).unwrap();
        assert_eq!(person["state"].as_str().map(str::len), Some(2));
        assert_eq!(person["dateTime"], generator.base_time_ms);
    }
}
