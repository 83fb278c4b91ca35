//! One value of a group key or an aggregate, in a form that can be hashed, ordered, written to
//! the repartition and changelog topics (JSON) and turned back into an Arrow column of the
//! query's type.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use serde::{Deserialize, Serialize};

use crate::error::{Result, StreamsError};

/// Written as the plain JSON value (`null`, `true`, `3`, `2.5`, `"a"`); read back by the JSON
/// value's kind (see the `Deserialize` impl: not `untagged`, which tries every variant in turn
/// and builds an error for each miss — a third of an interval join's time went there).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Datum {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
}

impl Datum {
    /// The value at `row` of `array`. Integers, timestamps and dates become `Int` (their Arrow
    /// type comes back from the query's schema when the column is rebuilt).
    pub fn from_array(array: &dyn Array, row: usize) -> Result<Datum> {
        if array.is_null(row) {
            return Ok(Datum::Null);
        }
        if let Some(values) = array.as_any().downcast_ref::<Int64Array>() {
            return Ok(Datum::Int(values.value(row)));
        }
        if let Some(values) = array.as_any().downcast_ref::<Float64Array>() {
            return Ok(Datum::Float(values.value(row)));
        }
        if let Some(values) = array.as_any().downcast_ref::<StringArray>() {
            return Ok(Datum::Str(values.value(row).to_string()));
        }
        Self::from_scalar(ScalarValue::try_from_array(array, row)?)
    }

    /// Whether values of `data_type` can be held (what [`Datum::from_scalar`] takes).
    pub fn can_hold(data_type: &DataType) -> bool {
        use DataType::*;
        matches!(
            data_type,
            Null | Boolean
                | Int8
                | Int16
                | Int32
                | Int64
                | UInt8
                | UInt16
                | UInt32
                | UInt64
                | Float32
                | Float64
                | Utf8
                | LargeUtf8
                | Utf8View
                | Date32
                | Date64
                | Timestamp(_, _)
        )
    }

    pub fn from_scalar(scalar: ScalarValue) -> Result<Datum> {
        if scalar.is_null() {
            return Ok(Datum::Null);
        }
        Ok(match scalar {
            ScalarValue::Boolean(Some(v)) => Datum::Bool(v),
            ScalarValue::Int8(Some(v)) => Datum::Int(v.into()),
            ScalarValue::Int16(Some(v)) => Datum::Int(v.into()),
            ScalarValue::Int32(Some(v)) => Datum::Int(v.into()),
            ScalarValue::Int64(Some(v)) => Datum::Int(v),
            ScalarValue::UInt8(Some(v)) => Datum::Int(v.into()),
            ScalarValue::UInt16(Some(v)) => Datum::Int(v.into()),
            ScalarValue::UInt32(Some(v)) => Datum::Int(v.into()),
            ScalarValue::UInt64(Some(v)) => Datum::Int(v as i64),
            ScalarValue::Float32(Some(v)) => Datum::Float(v.into()),
            ScalarValue::Float64(Some(v)) => Datum::Float(v),
            ScalarValue::Utf8(Some(v))
            | ScalarValue::LargeUtf8(Some(v))
            | ScalarValue::Utf8View(Some(v)) => Datum::Str(v),
            ScalarValue::Date32(Some(v)) => Datum::Int(v.into()),
            ScalarValue::Date64(Some(v))
            | ScalarValue::TimestampSecond(Some(v), _)
            | ScalarValue::TimestampMillisecond(Some(v), _)
            | ScalarValue::TimestampMicrosecond(Some(v), _)
            | ScalarValue::TimestampNanosecond(Some(v), _) => Datum::Int(v),
            other => {
                return Err(StreamsError::Query(format!(
                    "a windowed job cannot group or aggregate values of type {}",
                    other.data_type()
                )))
            }
        })
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Datum::Int(v) => Some(*v as f64),
            Datum::Float(v) => Some(*v),
            _ => None,
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Datum::Null => 0,
            Datum::Bool(_) => 1,
            Datum::Int(_) => 2,
            Datum::Float(_) => 3,
            Datum::Str(_) => 4,
        }
    }
}

impl<'de> Deserialize<'de> for Datum {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Datum, D::Error> {
        deserializer.deserialize_any(DatumVisitor)
    }
}

struct DatumVisitor;

impl<'de> serde::de::Visitor<'de> for DatumVisitor {
    type Value = Datum;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("null, a boolean, a number or a string")
    }

    fn visit_unit<E>(self) -> Result<Datum, E> {
        Ok(Datum::Null)
    }

    fn visit_none<E>(self) -> Result<Datum, E> {
        Ok(Datum::Null)
    }

    fn visit_bool<E>(self, value: bool) -> Result<Datum, E> {
        Ok(Datum::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Datum, E> {
        Ok(Datum::Int(value))
    }

    /// Beyond `i64` (never written by Weir): a float, as the untagged form read it.
    fn visit_u64<E>(self, value: u64) -> Result<Datum, E> {
        Ok(i64::try_from(value).map_or(Datum::Float(value as f64), Datum::Int))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Datum, E> {
        Ok(Datum::Float(value))
    }

    fn visit_str<E>(self, value: &str) -> Result<Datum, E> {
        Ok(Datum::Str(value.to_string()))
    }

    fn visit_string<E>(self, value: String) -> Result<Datum, E> {
        Ok(Datum::Str(value))
    }
}

impl PartialEq for Datum {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Datum {}

impl PartialOrd for Datum {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Datum {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Datum::Bool(a), Datum::Bool(b)) => a.cmp(b),
            (Datum::Int(a), Datum::Int(b)) => a.cmp(b),
            (Datum::Float(a), Datum::Float(b)) => a.total_cmp(b),
            (Datum::Str(a), Datum::Str(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl Hash for Datum {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.rank().hash(state);
        match self {
            Datum::Null => {}
            Datum::Bool(v) => v.hash(state),
            Datum::Int(v) => v.hash(state),
            Datum::Float(v) => v.to_bits().hash(state),
            Datum::Str(v) => v.hash(state),
        }
    }
}

/// A column of `data_type` holding `values`.
pub fn to_array<'a, I>(values: I, data_type: &DataType) -> Result<ArrayRef>
where
    I: IntoIterator<Item = &'a Datum>,
    I::IntoIter: Clone,
{
    let values = values.into_iter();
    let (mut strings, mut bools, mut floats) = (false, false, false);
    for value in values.clone() {
        match value {
            Datum::Str(_) => {
                strings = true;
                break;
            }
            Datum::Bool(_) => bools = true,
            Datum::Float(_) => floats = true,
            Datum::Null | Datum::Int(_) => {}
        }
    }
    let array: ArrayRef = if strings {
        Arc::new(StringArray::from_iter(values.map(|v| match v {
            Datum::Str(s) => Some(s.as_str()),
            _ => None,
        })))
    } else if bools {
        Arc::new(BooleanArray::from_iter(values.map(|v| match v {
            Datum::Bool(b) => Some(*b),
            _ => None,
        })))
    } else if floats {
        Arc::new(Float64Array::from_iter(values.map(Datum::as_f64)))
    } else {
        Arc::new(Int64Array::from_iter(values.map(|v| match v {
            Datum::Int(i) => Some(*i),
            _ => None,
        })))
    };
    let array = match data_type {
        // Days since the epoch were widened to Int64; Arrow casts dates from Int32.
        DataType::Date32 => cast(&array, &DataType::Int32)?,
        _ => array,
    };
    Ok(cast(&array, data_type)?)
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::datatypes::TimeUnit;

    use super::*;

    #[test]
    fn values_round_trip_through_json_and_arrow() {
        let values = vec![Datum::Int(-3), Datum::Null, Datum::Int(1_700_000_000_000)];
        let json = serde_json::to_string(&values).unwrap();
        let back: Vec<Datum> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, values);
        let timestamps =
            to_array(&back, &DataType::Timestamp(TimeUnit::Millisecond, None)).unwrap();
        assert_eq!(
            Datum::from_array(&timestamps, 2).unwrap(),
            Datum::Int(1_700_000_000_000)
        );
        assert_eq!(Datum::from_array(&timestamps, 1).unwrap(), Datum::Null);

        let floats = vec![Datum::Float(2.0), Datum::Float(0.5)];
        let json = serde_json::to_string(&floats).unwrap();
        assert_eq!(json, "[2.0,0.5]");
        assert_eq!(serde_json::from_str::<Vec<Datum>>(&json).unwrap(), floats);

        let mixed = vec![
            Datum::Null,
            Datum::Bool(true),
            Datum::Int(i64::MIN),
            Datum::Float(-1.5),
            Datum::Str("a \"b\"".into()),
        ];
        let json = serde_json::to_string(&mixed).unwrap();
        assert_eq!(json, r#"[null,true,-9223372036854775808,-1.5,"a \"b\""]"#);
        assert_eq!(serde_json::from_str::<Vec<Datum>>(&json).unwrap(), mixed);
        assert_eq!(
            serde_json::from_str::<Datum>("18446744073709551615").unwrap(),
            Datum::Float(u64::MAX as f64)
        );
        assert!(serde_json::from_str::<Datum>("[1]").is_err());
        assert!(serde_json::from_str::<Datum>(r#"{"a":1}"#).is_err());
    }
}
