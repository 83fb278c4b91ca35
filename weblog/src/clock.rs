//! The access-log time, `10/Oct/2000:13:55:36 -0700`, to and from epoch milliseconds (proleptic
//! Gregorian calendar, days counted as in Howard Hinnant's `days_from_civil`).

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Epoch milliseconds of a CLF time (`dd/Mon/yyyy:HH:MM:SS ±hhmm`).
pub fn parse_clf_time(text: &str) -> Result<i64, String> {
    let bad = || format!("time '{text}' is not dd/Mon/yyyy:HH:MM:SS +zzzz");
    let bytes = text.as_bytes();
    if bytes.len() != 26 || bytes[2] != b'/' || bytes[6] != b'/' || bytes[11] != b':' {
        return Err(bad());
    }
    if bytes[14] != b':' || bytes[17] != b':' || bytes[20] != b' ' {
        return Err(bad());
    }
    // `get`, not indexing: a multi-byte character may straddle a field's edge.
    let number = |range: std::ops::Range<usize>| -> Result<i64, String> {
        let digits = text.get(range).ok_or_else(bad)?;
        if digits.bytes().all(|b| b.is_ascii_digit()) {
            digits.parse::<i64>().map_err(|_| bad())
        } else {
            Err(bad())
        }
    };
    let day = number(0..2)?;
    let month = MONTHS
        .iter()
        .position(|m| Some(*m) == text.get(3..6))
        .ok_or_else(bad)? as i64
        + 1;
    let year = number(7..11)?;
    let (hour, minute, second) = (number(12..14)?, number(15..17)?, number(18..20)?);
    let sign = match bytes[21] {
        b'+' => 1,
        b'-' => -1,
        _ => return Err(bad()),
    };
    let offset_minutes = sign * (number(22..24)? * 60 + number(24..26)?);
    if !(1..=days_in_month(year, month)).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return Err(format!("time '{text}' is not a valid date and time"));
    }
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
    Ok(seconds * 1000)
}

/// The CLF time (UTC, `+0000`) of epoch milliseconds.
pub fn format_clf_time(epoch_ms: i64) -> String {
    let seconds = epoch_ms.div_euclid(1000);
    let (days, second_of_day) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    format!(
        "{day:02}/{}/{year:04}:{:02}:{:02}:{:02} +0000",
        MONTHS[(month - 1) as usize],
        second_of_day / 3600,
        second_of_day / 60 % 60,
        second_of_day % 60
    )
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}
