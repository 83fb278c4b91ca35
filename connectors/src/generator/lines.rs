//! Made-up but realistic access-log lines: weighted methods, paths, statuses and user agents,
//! IPv4 and IPv6 clients, empty referrers, quotes in user agents, a request time.

use crate::weblog::{format_clf_time, LogFormat};

const PATHS: &[&str] = &[
    "/",
    "/index.html",
    "/about",
    "/products",
    "/products/42",
    "/cart",
    "/checkout",
    "/api/v1/items",
    "/api/v1/items/17",
    "/api/v1/search",
    "/static/app.js",
    "/static/app.css",
    "/images/logo.png",
    "/favicon.ico",
    "/robots.txt",
    "/login",
    "/logout",
    "/wp-login.php",
];
const QUERIES: &[&str] = &[
    "",
    "",
    "",
    "?page=2",
    "?q=shoes&sort=price",
    "?utm_source=news",
    "?id=7",
];
const METHODS: &[(&str, u32)] = &[
    ("GET", 80),
    ("POST", 12),
    ("HEAD", 4),
    ("PUT", 2),
    ("DELETE", 2),
];
const STATUSES: &[(u16, u32)] = &[
    (200, 70),
    (304, 8),
    (301, 4),
    (302, 3),
    (404, 8),
    (403, 2),
    (400, 1),
    (500, 2),
    (502, 1),
    (503, 1),
];
const AGENTS: &[&str] = &[
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:128.0) Gecko/20100101 Firefox/128.0",
    "curl/8.5.0",
    "Googlebot/2.1 (+http://www.google.com/bot.html)",
    "python-requests/2.32.3",
    "Agent with \\\"quotes\\\"",
    "-",
];
const REFERRERS: &[&str] = &[
    "-",
    "-",
    "",
    "https://www.example.com/",
    "https://search.example.org/?q=weir",
];
const USERS: &[&str] = &["-", "-", "-", "-", "alice", "bob"];

/// Lines for one seed; `line(n)` is always the same line.
#[derive(Debug, Clone)]
pub struct AccessLogGenerator {
    pub format: LogFormat,
    pub seed: u64,
    pub start_time_ms: i64,
    /// Event time between two lines.
    pub line_interval_ms: i64,
    pub bad_line_every: Option<u64>,
}

/// SplitMix64: a few good random bits from a seed and a number.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn weighted<T: Copy>(choices: &[(T, u32)], roll: u64) -> T {
    let total: u64 = choices.iter().map(|(_, w)| u64::from(*w)).sum();
    let mut pick = roll % total;
    for (choice, weight) in choices {
        if pick < u64::from(*weight) {
            return *choice;
        }
        pick -= u64::from(*weight);
    }
    choices[0].0
}

impl AccessLogGenerator {
    /// Whether line `n` is one of the deliberately bad ones.
    pub fn is_bad(&self, n: u64) -> bool {
        self.bad_line_every
            .is_some_and(|every| n % every == every - 1)
    }

    /// The time of line `n` (`line_interval_ms` apart, never going back).
    pub fn time_ms(&self, n: u64) -> i64 {
        self.start_time_ms + (n as i64) * self.line_interval_ms
    }

    pub fn line(&self, n: u64) -> String {
        let r = |salt: u64| mix(self.seed ^ mix(n.wrapping_mul(31).wrapping_add(salt)));
        if self.is_bad(n) {
            return format!("garbage line {n} \"unterminated {}", r(0) % 1000);
        }
        let client = if r(1) % 10 == 0 {
            format!("2001:db8::{:x}", r(2) % 0xffff)
        } else {
            format!(
                "{}.{}.{}.{}",
                10 + r(2) % 200,
                r(3) % 256,
                r(4) % 256,
                1 + r(5) % 254
            )
        };
        let method = weighted(METHODS, r(6));
        let path = PATHS[(r(7) % PATHS.len() as u64) as usize];
        let query = QUERIES[(r(8) % QUERIES.len() as u64) as usize];
        let status = weighted(STATUSES, r(9));
        let bytes = if status == 304 {
            "0".to_string()
        } else {
            (r(10) % 50_000).to_string()
        };
        let bytes = if r(11) % 50 == 0 {
            "-".to_string()
        } else {
            bytes
        };
        let user = USERS[(r(12) % USERS.len() as u64) as usize];
        let time = format_clf_time(self.time_ms(n));
        let common = format!(
            "{client} - {user} [{time}] \"{method} {path}{query} HTTP/1.1\" {status} {bytes}"
        );
        if self.format == LogFormat::ApacheCommon {
            return common;
        }
        let referrer = REFERRERS[(r(13) % REFERRERS.len() as u64) as usize];
        let agent = AGENTS[(r(14) % AGENTS.len() as u64) as usize];
        let request_time = format!("{}.{:03}", r(15) % 2, r(16) % 1000);
        if self.format == LogFormat::NginxCombined {
            format!("{common} \"{referrer}\" \"{agent}\" {request_time}")
        } else {
            format!("{common} \"{referrer}\" \"{agent}\"")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_except_the_bad_ones_and_repeat_for_a_seed() {
        for format in [
            LogFormat::NginxCombined,
            LogFormat::ApacheCombined,
            LogFormat::ApacheCommon,
        ] {
            let generator = AccessLogGenerator {
                format,
                seed: 7,
                start_time_ms: 0,
                line_interval_ms: 10,
                bad_line_every: Some(100),
            };
            for n in 0..2000 {
                let line = generator.line(n);
                assert_eq!(line, generator.line(n));
                let mut out = Vec::new();
                let parsed = format.parse_into(&line, &mut out);
                assert_eq!(
                    parsed.is_err(),
                    generator.is_bad(n),
                    "{format:?} line {n}: {line}"
                );
            }
        }
    }
}
