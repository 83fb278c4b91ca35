#!/usr/bin/env bash
# The weblogs example, start to finish: builds `weir`, runs examples/weblogs/pipeline.yaml on an
# embedded broker until the sample log is read (nginx lines → topic → SQL → Parquet, exactly
# once), then queries the Parquet files: requests per minute per status.
# Run it from the repository's root. Re-running it adds nothing: the pipeline resumes where it
# stopped (delete examples/weblogs/warehouse and examples/weblogs/weir-data to start over).
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/weir/target}
# The `quick` profile (Cargo.toml): `release` without optimisation, a fifth of its build on a
# fresh machine and fast enough for the sample; WEIR_PROFILE=release builds (and shares) the
# test command's build instead, as benchmarks and production want.
profile=${WEIR_PROFILE:-quick}
cargo build --profile "$profile" --bin weir
weir=$CARGO_TARGET_DIR/$profile/weir
RUST_LOG=${RUST_LOG:-warn} "$weir" pipeline run examples/weblogs/pipeline.yaml \
  --data-dir examples/weblogs/weir-data --until-caught-up
echo
echo "Requests per minute and status (from the Parquet files in examples/weblogs/warehouse):"
"$weir" sql --parquet requests=examples/weblogs/warehouse/requests "
  SELECT minute,
         count(*) AS requests,
         sum(CASE WHEN status < 400 THEN 1 ELSE 0 END) AS ok,
         sum(CASE WHEN status >= 400 AND status < 500 THEN 1 ELSE 0 END) AS client_errors,
         sum(CASE WHEN status >= 500 THEN 1 ELSE 0 END) AS server_errors
  FROM requests GROUP BY minute ORDER BY minute"
