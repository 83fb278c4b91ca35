//! What the record ciphers themselves cost on this machine: ring (the provider Weir's rustls
//! uses) sealing 16 KiB records — TLS's largest, as a bulk transfer sends them — on one core,
//! for each AEAD a TLS 1.3 suite uses. The floor under any TLS listener's cost per byte.
//!
//! `cargo bench -p weir-tls --bench aead` (environment: AEAD_BENCH_GIB, default 4, per cipher).

use std::hint::black_box;
use std::time::Instant;

use ring::aead::{
    Aad, Algorithm, LessSafeKey, Nonce, UnboundKey, AES_128_GCM, AES_256_GCM, CHACHA20_POLY1305,
};

const RECORD_BYTES: usize = 16 * 1024;

fn main() {
    let gib: usize = std::env::var("AEAD_BENCH_GIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4);
    let total = gib << 30;
    let ciphers: [(&str, &Algorithm); 3] = [
        ("AES-128-GCM", &AES_128_GCM),
        ("AES-256-GCM", &AES_256_GCM),
        ("ChaCha20-Poly1305", &CHACHA20_POLY1305),
    ];
    for (name, algorithm) in ciphers {
        let key_bytes = vec![7u8; algorithm.key_len()];
        let key = LessSafeKey::new(UnboundKey::new(algorithm, &key_bytes).expect("key length"));
        let mut record = vec![1u8; RECORD_BYTES];
        let started = Instant::now();
        let mut sequence = 0u64;
        let mut sealed = 0usize;
        while sealed < total {
            let mut nonce = [0u8; 12];
            nonce[4..].copy_from_slice(&sequence.to_be_bytes());
            let tag = key
                .seal_in_place_separate_tag(
                    Nonce::assume_unique_for_key(nonce),
                    Aad::empty(),
                    &mut record,
                )
                .expect("sealed");
            black_box(&tag);
            sealed += RECORD_BYTES;
            sequence += 1;
        }
        let seconds = started.elapsed().as_secs_f64();
        println!(
            "{name}: {:.2} GB/s ({gib} GiB in 16 KiB records, one core)",
            sealed as f64 / seconds / 1e9
        );
    }
}
