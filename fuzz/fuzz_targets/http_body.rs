//! An HTTP ingest body as the `http` source splits it into lines (plain and NDJSON, with a line
//! bound): lines or a refusal — never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weir_weblog::body::body_lines;
use weir_weblog::LogFormat;

fuzz_target!(|data: &[u8]| {
    let [max_lines, body @ ..] = data else {
        return;
    };
    for format in [LogFormat::Json, LogFormat::NginxCombined, LogFormat::Raw] {
        let _ = body_lines(body, format, *max_lines as usize);
    }
});
