"""Temporal expressions in a query (先月, last month, 6月の, in June …) → an inclusive DateRange.

Pure and stdlib-only: `today` is always passed in, so every answer is reproducible in tests.
Filters point to the past (notes are searched after they are written), and when a phrase is
ambiguous we apply no filter: a missed filter costs a little ranking, a wrong one hides notes.

Choices worth knowing (the tests pin each one):
- Calendar periods are whole: 先週/last week is the previous Monday–Sunday, 今月/this month the
  whole month; N日前 is one day, N週間前 the Monday–Sunday week, Nヶ月前 the calendar month,
  N年前 the calendar year.
- 最近/recently/lately: the last 30 days (today − 30 … today), like `--recent 30d`.
- 少し前/a while ago: 60 to 7 days ago — older than "this week", younger than "a few months".
- 半年前: the three calendar months centred on the month six months ago (fuzzy on purpose).
- 年末: December of the most recent year-end that has begun (this year's only in December).
  年始: 1–15 January of this year (it has always begun). 年末年始: 1 Dec – 15 Jan around it.
  今年度/昨年度/YYYY年度: the Japanese fiscal year, April to March.
- N月, N月N日, in June: the most recent such month/day that is not in the future.
  N月上旬/中旬/下旬/末: days 1–10, 11–20, 21–end (末 is read like 下旬).
- Years after this year (2027年の計画, in 2048) or before 1900 (1000年前) are topics, not filters.
- Bare "may", "March" or "2024" never fire; "in May", "since 2024", "March 2025" do.
  月曜日, 五月雨, 最近傍, 年末調整, 今月号 and 今日本 (今 + 日本) are left alone.
- から/以降/以来/以後/since open the end; まで/以前/until/till open the start;
  before/after are exclusive. The first valid expression in the text wins.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass

_Span = tuple[dt.date, dt.date]
_Resolver = Callable[[re.Match[str], dt.date], _Span]


@dataclass(frozen=True)
class DateRange:
    """A date filter taken from the query; both ends inclusive, None means open."""

    after: dt.date | None
    before: dt.date | None
    expression: str


# --- numbers and units ---------------------------------------------------------------------

_KANJI_DIGITS = {ch: i for i, ch in enumerate("〇一二三四五六七八九")}
_EN_COUNTS = "one two three four five six seven eight nine ten eleven twelve".split()
_EN_NUMBERS = {word: i for i, word in enumerate(_EN_COUNTS, 1)} | {"a": 1, "an": 1}
_MONTH_NAMES = "jan feb mar apr may jun jul aug sep oct nov dec".split()
_ONE_DAY, _ONE_WEEK = dt.timedelta(days=1), dt.timedelta(weeks=1)


def _number(text: int | str) -> int:
    """Digits (ASCII or full-width: int() reads both), kanji up to 99, or an English word."""
    if isinstance(text, int):
        return text
    if text.isdecimal():
        return int(text)
    if text.lower() in _EN_NUMBERS:
        return _EN_NUMBERS[text.lower()]
    tens, ten, ones = text.partition("十")
    if not ten:
        return _KANJI_DIGITS[text]
    return (_KANJI_DIGITS[tens] if tens else 1) * 10 + (_KANJI_DIGITS[ones] if ones else 0)


def _unit(word: str) -> str:
    """日/週/ヶ月/年 or day/week/month/year → d, w, m, y."""
    first = word[0].lower()
    return {"日": "d", "週": "w", "年": "y", "d": "d", "w": "w", "m": "m", "y": "y"}.get(first, "m")


def _en_month(name: str) -> int:
    return _MONTH_NAMES.index(name[:3].lower()) + 1


# --- calendar arithmetic -------------------------------------------------------------------


def _day(day: dt.date) -> _Span:
    return day, day


def _month(year: int, month: int) -> _Span:
    return dt.date(year, month, 1), dt.date(year, month, calendar.monthrange(year, month)[1])


def _shift_month(year: int, month: int, delta: int) -> tuple[int, int]:
    index = year * 12 + month - 1 + delta
    return index // 12, index % 12 + 1


def _months_ago(today: dt.date, n: int) -> _Span:
    return _month(*_shift_month(today.year, today.month, -n))


def _year(year: int) -> _Span:
    return dt.date(year, 1, 1), dt.date(year, 12, 31)


def _week(day: dt.date) -> _Span:
    monday = day - dt.timedelta(days=day.weekday())
    return monday, monday + dt.timedelta(days=6)


def _weekend(day: dt.date) -> _Span:
    sunday = _week(day)[1]
    return sunday - _ONE_DAY, sunday


def _a_while_ago(today: dt.date) -> _Span:
    """少し前 / a while ago: older than this week, younger than "a few months"."""
    return today - dt.timedelta(days=60), today - dt.timedelta(days=7)


def _last_december(today: dt.date) -> int:
    """Year of the most recent December that has begun."""
    return today.year if today.month == 12 else today.year - 1


def _year_end_holidays(today: dt.date) -> _Span:
    year = _last_december(today)
    return dt.date(year, 12, 1), dt.date(year + 1, 1, 15)


def _fiscal_year(start_year: int) -> _Span:
    """Japanese fiscal year: April of start_year to March of the next."""
    return dt.date(start_year, 4, 1), dt.date(start_year + 1, 3, 31)


def _current_fiscal_start(today: dt.date) -> int:
    return today.year if today.month >= 4 else today.year - 1


def _past_fiscal_year(year: str, today: dt.date) -> int:
    if not 1900 <= int(year) <= _current_fiscal_start(today):
        raise ValueError(f"fiscal year {year} has not begun")
    return int(year)


def _go_back(today: dt.date, n: int, unit: str) -> dt.date:
    """today minus n days/weeks/months/years; a missing day (31 Feb) clamps to month end."""
    if unit == "d":
        return today - dt.timedelta(days=n)
    if unit == "w":
        return today - dt.timedelta(weeks=n)
    year, month = _shift_month(today.year, today.month, -n if unit == "m" else -12 * n)
    return dt.date(year, month, min(today.day, calendar.monthrange(year, month)[1]))


def _window(today: dt.date, count: int | str, unit: str) -> _Span:
    """A rolling window ending today: 過去7日, last 3 months, 最近."""
    return _go_back(today, _number(count), _unit(unit)), today


def _ago(today: dt.date, count: int | str, unit: str) -> _Span:
    """The calendar period (day, Mon–Sun week, month, year) count units before today's."""
    n, unit = _number(count), _unit(unit)
    if unit == "d":
        span = _day(today - dt.timedelta(days=n))
    elif unit == "w":
        span = _week(today - dt.timedelta(weeks=n))
    else:
        span = _months_ago(today, n) if unit == "m" else _year(today.year - n)
    if span[0].year < 1900:  # 1000年前 is history, not a note's date
        raise ValueError(f"{n}{unit} ago is before 1900")
    return span


def _past_month(month: int | str, today: dt.date) -> int:
    """Year of the most recent month `month` that is not in the future."""
    if not 1 <= _number(month) <= 12:
        raise ValueError(f"no month {month}")
    return today.year if _number(month) <= today.month else today.year - 1


def _past_year(year: str, today: dt.date) -> int:
    if not 1900 <= int(year) <= today.year:
        raise ValueError(f"year {year} is not in the past")
    return int(year)


def _past_day(month: str, day: str, today: dt.date) -> dt.date:
    """Most recent month/day not after today; 2月29日 finds the last leap year."""
    for year in range(today.year, today.year - 9, -1):
        try:
            candidate = dt.date(year, _number(month), _number(day))
        except ValueError:
            continue
        if candidate <= today:
            return candidate
    raise ValueError(f"no day {month}/{day}")


def _full_date(year: str, month: str, day: str, today: dt.date) -> dt.date:
    return dt.date(_past_year(year, today), _number(month), _number(day))


def _part(year: int, month: int | str, part: str | None) -> _Span:
    """A month, or its 上旬 (1–10), 中旬 (11–20) or 下旬/末 (21–end)."""
    first, last = _month(year, _number(month))
    if part == "上旬":
        return first, first.replace(day=10)
    if part == "中旬":
        return first.replace(day=11), first.replace(day=20)
    if part in ("下旬", "末"):
        return first.replace(day=21), last
    return first, last


# --- patterns ------------------------------------------------------------------------------

_NUM = r"[0-9０-９]{1,4}|[一二三四五六七八九]?十[一二三四五六七八九]?|[〇一二三四五六七八九]"
_YEAR = r"(?<![0-9０-９])[0-9０-９]{4}"
_NO_NUM_BEFORE = r"(?<![0-9０-９〇一二三四五六七八九十])"
_JA_UNIT = r"日|週間|週|[ヶケかカヵ]月|箇月|年"
_PART = r"(上旬|中旬|下旬|末)?(?![曜雨蝿])"  # not 月曜日 or 五月雨
_EN_COUNT = "[0-9]{1,4}|" + "|".join(_EN_COUNTS)
_EN_UNIT = r"(day|week|month|year)s?"
_EN_MONTH = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
# A bare month or year is a date only after these ("since 2024"); the word stays outside the
# match so that _cut reads it as a bound.
_INTRO_WORDS = ("since", "until", "till", "before", "after", "during")
_EN_INTRO = "(?:" + "|".join(rf"(?<=\b{word}\s)" for word in _INTRO_WORDS) + ")"
_NOT_ISO = r"(?![-/.][0-9])"  # 2024-05-01 is not "in 2024"


# --- the rules: at one start the longer match wins, then the earlier rule -------------------

_JA_RULES: tuple[tuple[str, _Resolver], ...] = (
    (r"今日(?!本)|本日", lambda _, t: _day(t)),
    (r"昨日", lambda _, t: _day(t - _ONE_DAY)),
    (r"一昨日|おととい", lambda _, t: _day(t - 2 * _ONE_DAY)),
    (r"先週末", lambda _, t: _weekend(t - _ONE_WEEK)),
    (r"今週末", lambda _, t: _weekend(t)),
    (r"先々週", lambda _, t: _week(t - 2 * _ONE_WEEK)),
    (r"先週", lambda _, t: _week(t - _ONE_WEEK)),
    (r"今週", lambda _, t: _week(t)),
    (r"先々月", lambda _, t: _months_ago(t, 2)),
    (r"先月(?!号)", lambda _, t: _months_ago(t, 1)),
    (r"今月(?!号)", lambda _, t: _months_ago(t, 0)),
    (r"今年度", lambda _, t: _fiscal_year(_current_fiscal_start(t))),
    (r"昨年度|前年度|去年度", lambda _, t: _fiscal_year(_current_fiscal_start(t) - 1)),
    (r"一昨年|おととし", lambda _, t: _year(t.year - 2)),
    (r"去年|昨年", lambda _, t: _year(t.year - 1)),
    (r"今年", lambda _, t: _year(t.year)),
    (r"最近(?![傍接])", lambda _, t: _window(t, 30, "d")),  # not 最近傍 (nearest neighbour)
    (r"少し前", lambda _, t: _a_while_ago(t)),
    (r"半年前", lambda _, t: (_months_ago(t, 7)[0], _months_ago(t, 5)[1])),
    (r"年末年始", lambda _, t: _year_end_holidays(t)),
    (r"年末(?!調整)", lambda _, t: _month(_last_december(t), 12)),
    (r"年始", lambda _, t: (dt.date(t.year, 1, 1), dt.date(t.year, 1, 15))),
    (rf"({_YEAR})年({_NUM})月({_NUM})日", lambda m, t: _day(_full_date(m[1], m[2], m[3], t))),
    (rf"({_YEAR})年({_NUM})月{_PART}", lambda m, t: _part(_past_year(m[1], t), m[2], m[3])),
    (rf"({_YEAR})年度", lambda m, t: _fiscal_year(_past_fiscal_year(m[1], t))),
    (rf"({_YEAR})年(?!度)", lambda m, t: _year(_past_year(m[1], t))),
    (rf"{_NO_NUM_BEFORE}({_NUM})\s*({_JA_UNIT})前(?!半)", lambda m, t: _ago(t, m[1], m[2])),
    (rf"(?:過去|直近|ここ)\s*({_NUM})\s*({_JA_UNIT})間?", lambda m, t: _window(t, m[1], m[2])),
    (rf"{_NO_NUM_BEFORE}({_NUM})月({_NUM})日", lambda m, t: _day(_past_day(m[1], m[2], t))),
    (rf"{_NO_NUM_BEFORE}({_NUM})月{_PART}", lambda m, t: _part(_past_month(m[1], t), m[1], m[2])),
)

# Wrapped in ASCII word edges (which also hold next to kana) and matched case-insensitively.
_EN_RULES: tuple[tuple[str, _Resolver], ...] = (
    (r"today", lambda _, t: _day(t)),
    (r"(?:the\s+)?day\s+before\s+yesterday", lambda _, t: _day(t - 2 * _ONE_DAY)),
    (r"yesterday", lambda _, t: _day(t - _ONE_DAY)),
    (r"last\s+weekend", lambda _, t: _weekend(t - _ONE_WEEK)),
    (r"this\s+weekend", lambda _, t: _weekend(t)),
    (r"last\s+week", lambda _, t: _week(t - _ONE_WEEK)),
    (r"this\s+week", lambda _, t: _week(t)),
    (r"last\s+month", lambda _, t: _months_ago(t, 1)),
    (r"this\s+month", lambda _, t: _months_ago(t, 0)),
    (r"last\s+year", lambda _, t: _year(t.year - 1)),
    (r"this\s+year", lambda _, t: _year(t.year)),
    (r"recently|lately", lambda _, t: _window(t, 30, "d")),
    (r"a\s+while\s+(?:ago|back)", lambda _, t: _a_while_ago(t)),
    (rf"({_EN_COUNT}|an?)\s+{_EN_UNIT}\s+ago", lambda m, t: _ago(t, m[1], m[2])),
    (rf"(?:last|past)\s+({_EN_COUNT})\s+{_EN_UNIT}", lambda m, t: _window(t, m[1], m[2])),
    (r"past\s+(day|week|month|year)", lambda m, t: _window(t, 1, m[1])),
    (
        rf"(?:in\s+)?{_EN_MONTH}\.?,?\s+([0-9]{{4}}){_NOT_ISO}",
        lambda m, t: _month(_past_year(m[2], t), _en_month(m[1])),
    ),
    (
        rf"(?:in\s+|{_EN_INTRO}){_EN_MONTH}(?!\.?\s*[0-9])",  # "in May 5th" is left alone
        lambda m, t: _month(_past_month(_en_month(m[1]), t), _en_month(m[1])),
    ),
    (rf"(?:in\s+|{_EN_INTRO})([0-9]{{4}}){_NOT_ISO}", lambda m, t: _year(_past_year(m[1], t))),
)

_RULES: list[tuple[re.Pattern[str], _Resolver]] = [
    (re.compile(pattern), resolve) for pattern, resolve in _JA_RULES
] + [
    (re.compile(rf"(?<![A-Za-z0-9])(?:{pattern})(?![A-Za-z0-9])", re.I), resolve)
    for pattern, resolve in _EN_RULES
]


# --- what surrounds the expression: bounds, particles, prepositions ----------------------

_EN_BOUND = re.compile(r"(?<![A-Za-z0-9])(since|until|till|before|after)\s+$", re.I)
# Words left without an object once the expression goes: "notes from (the) last week".
_EN_DANGLING = re.compile(
    r"(?<![A-Za-z0-9])(?:(?:from|during|in|of|over|within|for|earlier|the)\s+){1,3}$", re.I
)
_POSSESSIVE = re.compile(r"['’]s(?![A-Za-z0-9])")
# One-kana particles are taken only when no hiragana follows: 今日はじめて keeps はじめて.
_JA_SUFFIX = re.compile(
    r"\s*(?:頃|ごろ|ころ|くらい|ぐらい|あたり)?"
    r"(?P<bound>から|以降|以来|以後|まで|以前)?"
    r"(?:(?:には|では|にも|でも|に|で|は|も|と)(?![ぁ-ゖ])|の)?"
)
_JA_DANGLING = re.compile(r"(?<![ぁ-ゖ])[のをにではがもと]$")
_OPEN_END = {"since", "から", "以降", "以来", "以後"}
_OPEN_START = {"until", "till", "まで", "以前"}


def _bounded(span: _Span, word: str) -> tuple[dt.date | None, dt.date | None]:
    """Apply "since"/"から" and friends: one end of the period opens."""
    after, before = span
    word = word.lower()
    if word in _OPEN_END:
        return after, None
    if word in _OPEN_START:
        return None, before
    if word == "before":
        return None, after - dt.timedelta(days=1)
    if word == "after":
        return before + dt.timedelta(days=1), None
    return after, before


def _has_words(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


def _ascii_word(ch: str) -> bool:
    return ch.isascii() and ch.isalnum()


def _join(head: str, tail: str) -> str:
    """Glue the text around a removed expression: Japanese needs no space, words do."""
    if not _has_words(tail):
        head = _JA_DANGLING.sub("", head.rstrip())
    spaced = (
        head[-1:].isspace() or tail[:1].isspace() or _ascii_word(head[-1:]) or _ascii_word(tail[:1])
    )
    text = re.sub(r"\s+", " ", head + (" " if spaced else "") + tail)
    text = re.sub(r" (?=[,.;:!?、。，．！？])", "", text).strip(" ,;:、，")
    return text if _has_words(text) else ""


def _cut(query: str, match: re.Match[str], span: _Span) -> tuple[str, DateRange]:
    start, end = match.span()
    cut_start, expr_start, expr_end, bound = start, start, end, ""
    near = max(0, start - 40)  # look only at the last few words: long prompts stay linear
    if prefix := _EN_BOUND.search(query, near, start):
        bound, cut_start, expr_start = prefix[1], prefix.start(), prefix.start()
    elif dangling := _EN_DANGLING.search(query, near, start):
        cut_start = dangling.start()
    pos = possessive.end() if (possessive := _POSSESSIVE.match(query, end)) else end
    cut_end = pos
    if (suffix := _JA_SUFFIX.match(query, pos)) and suffix[0].strip():  # "先月 の" too
        cut_end = suffix.end()
        if suffix["bound"] and not bound:
            bound, expr_end = suffix["bound"], suffix.end("bound")
    after, before = _bounded(span, bound)
    expression = " ".join(query[expr_start:expr_end].split())
    return _join(query[:cut_start], query[cut_end:]), DateRange(after, before, expression)


def extract_dates(query: str, today: dt.date) -> tuple[str, DateRange | None]:
    """Take the first valid temporal expression out of the query, so it filters, not matches.

    Returns the query without it (particles and spacing tidied; "" if nothing else was
    asked) and its range. Without a valid expression the query comes back untouched.
    """
    found = sorted(
        (
            (m.start(), -len(m[0]), index, m, resolve)
            for index, (pattern, resolve) in enumerate(_RULES)
            for m in pattern.finditer(query)
        ),
        key=lambda candidate: candidate[:3],
    )
    invalid: list[tuple[int, int]] = []
    for start, _, _, match, resolve in found:
        end = match.end()
        # Inside an invalid expression (13月, 2月30日) no shorter reading may fire either.
        if any(start < bad_end and bad_start < end for bad_start, bad_end in invalid):
            continue
        try:
            return _cut(query, match, resolve(match, today))
        except (ValueError, OverflowError):
            invalid.append((start, end))
    return query, None


# --- command-line flags --------------------------------------------------------------------

_FLAG_DATE = re.compile(r"([0-9]{4})(?:-([0-9]{1,2})(?:-([0-9]{1,2}))?)?")
_RECENT = re.compile(r"([0-9]+)\s*([dwmy])", re.I)


def parse_date_flag(value: str, *, end: bool) -> dt.date:
    """YYYY, YYYY-MM or YYYY-MM-DD → first day, or last with end=True (ranges are inclusive)."""
    example = "use YYYY, YYYY-MM or YYYY-MM-DD, e.g. 2025, 2025-03 or 2025-03-18"
    match = _FLAG_DATE.fullmatch(value.strip())
    if not match:
        raise ValueError(f"invalid date {value!r}: {example}")
    year, month, day = int(match[1]), match[2], match[3]
    try:
        if day is not None:
            return dt.date(year, int(month), int(day))
        first, last = _month(year, int(month)) if month is not None else _year(year)
    except ValueError:
        part = "day" if day else "month" if month else "year"
        raise ValueError(f"invalid date {value!r}: no such {part}; {example}") from None
    return last if end else first


def parse_recent(value: str, today: dt.date) -> dt.date:
    """Turn "30d", "2w", "3m" or "1y" into the first day of a window ending today (inclusive)."""
    hint = "use a number and d, w, m or y, e.g. --recent 30d, 2w, 3m or 1y"
    match = _RECENT.fullmatch(value.strip())
    if not match or int(match[1]) < 1:
        raise ValueError(f"invalid --recent {value!r}: {hint}")
    try:
        return _go_back(today, int(match[1]), match[2].lower())
    except (ValueError, OverflowError):
        raise ValueError(f"--recent {value!r} reaches too far back: {hint}") from None
