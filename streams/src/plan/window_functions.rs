//! The window functions a query groups by: `tumble(time, size)`, `hop(time, slide, size)` and
//! `session(time, gap)`.
//!
//! Each returns the start of a window as a millisecond timestamp (tumbling and hopping windows
//! are aligned to the Unix epoch, `[start, start + size)`; a session starts at its first record).
//! `tumble` is an ordinary scalar function, so it also works in `weir sql` over a whole topic;
//! `hop` puts a row in `size / slide` windows and `session` depends on the key's other rows,
//! which only a windowed job can do, so evaluating them as scalars is an error.

use std::sync::Arc;

use datafusion::arrow::array::{Array, TimestampMillisecondArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, IntervalUnit, TimeUnit};
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

use crate::plan::window_spec::WindowSpec;

pub const TUMBLE: &str = "tumble";
pub const HOP: &str = "hop";
pub const SESSION: &str = "session";

/// The event time of windows: milliseconds since the epoch, no time zone.
pub const WINDOW_TIME_TYPE: DataType = DataType::Timestamp(TimeUnit::Millisecond, None);

/// Makes `tumble`, `hop` and `session` known to `context`'s SQL.
pub fn register(context: &SessionContext) {
    context.register_udf(ScalarUDF::from(WindowFunction::new(TUMBLE, 2)));
    context.register_udf(ScalarUDF::from(WindowFunction::new(HOP, 3)));
    context.register_udf(ScalarUDF::from(WindowFunction::new(SESSION, 2)));
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct WindowFunction {
    name: &'static str,
    arguments: usize,
    signature: Signature,
}

impl WindowFunction {
    fn new(name: &'static str, arguments: usize) -> Self {
        WindowFunction {
            name,
            arguments,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for WindowFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if arg_types.len() != self.arguments {
            return plan_err!(
                "{}() takes {} arguments: the event time and {}",
                self.name,
                self.arguments,
                match self.name {
                    SESSION => "the gap",
                    HOP => "the slide and the window size",
                    _ => "the window size",
                }
            );
        }
        let mut types = vec![WINDOW_TIME_TYPE];
        types.extend(std::iter::repeat_n(
            DataType::Interval(IntervalUnit::MonthDayNano),
            self.arguments - 1,
        ));
        Ok(types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(WINDOW_TIME_TYPE)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if self.name == HOP {
            return exec_err!(
                "hop() puts a row in several windows: use it in the GROUP BY of a windowed job"
            );
        }
        if self.name == SESSION {
            return exec_err!(
                "session() depends on the key's other rows: use it in the GROUP BY of a \
                 windowed job"
            );
        }
        let size_ms = interval_ms(&args.args[1], "the window size")?;
        let times = args.args[0].to_array(args.number_rows)?;
        let times = cast(&times, &WINDOW_TIME_TYPE)?;
        let times = times
            .as_any()
            .downcast_ref::<TimestampMillisecondArray>()
            .expect("cast to millisecond timestamps");
        let window = WindowSpec::tumble(size_ms)?;
        let starts: TimestampMillisecondArray = times.unary(|time| window.last_start(time));
        Ok(ColumnarValue::Array(Arc::new(starts)))
    }
}

/// A constant interval argument in milliseconds; months (of varying length) are refused.
pub fn interval_ms(value: &ColumnarValue, what: &str) -> Result<i64> {
    let ColumnarValue::Scalar(scalar) = value else {
        return exec_err!("{what} must be a constant INTERVAL");
    };
    scalar_interval_ms(scalar, what)
}

pub fn scalar_interval_ms(scalar: &ScalarValue, what: &str) -> Result<i64> {
    let ms = match scalar {
        ScalarValue::IntervalMonthDayNano(Some(interval)) if interval.months == 0 => {
            interval.days as i64 * 86_400_000 + interval.nanoseconds / 1_000_000
        }
        ScalarValue::IntervalDayTime(Some(interval)) => {
            interval.days as i64 * 86_400_000 + interval.milliseconds as i64
        }
        ScalarValue::IntervalMonthDayNano(Some(_)) | ScalarValue::IntervalYearMonth(Some(_)) => {
            return plan_err!("{what} cannot be in months or years (their length varies)")
        }
        other => return plan_err!("{what} must be a constant INTERVAL, not {other}"),
    };
    if ms <= 0 {
        return plan_err!("{what} must be at least one millisecond");
    }
    Ok(ms)
}
