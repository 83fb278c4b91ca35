//! One web-server log line through every format's parser (nginx/apache combined, apache
//! common, JSON lines, raw): a parsed object or a reason — never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weir_weblog::LogFormat;

const FORMATS: [LogFormat; 5] = [
    LogFormat::NginxCombined,
    LogFormat::ApacheCommon,
    LogFormat::ApacheCombined,
    LogFormat::Json,
    LogFormat::Raw,
];

fuzz_target!(|data: &[u8]| {
    let line = String::from_utf8_lossy(data);
    let mut out = Vec::new();
    for format in FORMATS {
        out.clear();
        let _ = format.parse_into(&line, &mut out);
    }
});
