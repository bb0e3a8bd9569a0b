"""Temporal expressions → date ranges: a table at a fixed Wednesday, then the calendar's edges."""

from __future__ import annotations

import inspect
import time
from datetime import date

import pytest

from tsm.search import dates
from tsm.search.dates import DateRange, extract_dates, parse_date_flag, parse_recent

TODAY = date(2026, 3, 18)  # a Wednesday: this week is 16–22 March, last week 9–15 March

D = date


def month(year: int, number: int) -> tuple[date, date]:
    """Whole calendar month, written out so the table reads as ranges."""
    last = {2: 29 if year % 4 == 0 else 28, 4: 30, 6: 30, 9: 30, 11: 30}.get(number, 31)
    return D(year, number, 1), D(year, number, last)


def year(number: int) -> tuple[date, date]:
    return D(number, 1, 1), D(number, 12, 31)


def day(value: date) -> tuple[date, date]:
    return value, value


RANGES: list[tuple[str, tuple[date | None, date | None]]] = [
    # Japanese words
    ("今日", day(TODAY)),
    ("本日", day(TODAY)),
    ("昨日", day(D(2026, 3, 17))),
    ("一昨日", day(D(2026, 3, 16))),
    ("おととい", day(D(2026, 3, 16))),
    ("先週", (D(2026, 3, 9), D(2026, 3, 15))),
    ("今週", (D(2026, 3, 16), D(2026, 3, 22))),
    ("先々週", (D(2026, 3, 2), D(2026, 3, 8))),
    ("先週末", (D(2026, 3, 14), D(2026, 3, 15))),
    ("今週末", (D(2026, 3, 21), D(2026, 3, 22))),
    ("先月", month(2026, 2)),
    ("今月", month(2026, 3)),
    ("先々月", month(2026, 1)),
    ("去年", year(2025)),
    ("昨年", year(2025)),
    ("一昨年", year(2024)),
    ("おととし", year(2024)),
    ("今年", year(2026)),
    ("最近", (D(2026, 2, 16), TODAY)),
    ("少し前", (D(2026, 1, 17), D(2026, 3, 11))),
    ("半年前", (D(2025, 8, 1), D(2025, 10, 31))),
    ("年末", month(2025, 12)),
    ("年始", (D(2026, 1, 1), D(2026, 1, 15))),
    ("年末年始", (D(2025, 12, 1), D(2026, 1, 15))),
    ("今年度", (D(2025, 4, 1), D(2026, 3, 31))),
    ("昨年度", (D(2024, 4, 1), D(2025, 3, 31))),
    ("2025年度", (D(2025, 4, 1), D(2026, 3, 31))),
    # Japanese counts: one day, a Monday–Sunday week, a calendar month, a calendar year
    ("3日前", day(D(2026, 3, 15))),
    ("三日前", day(D(2026, 3, 15))),
    ("二十日前", day(D(2026, 2, 26))),
    ("2週間前", (D(2026, 3, 2), D(2026, 3, 8))),
    ("1週前", (D(2026, 3, 9), D(2026, 3, 15))),
    ("3ヶ月前", month(2025, 12)),
    ("３ヶ月前", month(2025, 12)),
    ("3か月前", month(2025, 12)),
    ("3カ月前", month(2025, 12)),
    ("3ケ月前", month(2025, 12)),
    ("3ヵ月前", month(2025, 12)),
    ("十二ヶ月前", month(2025, 3)),
    ("1年前", year(2025)),
    ("過去7日", (D(2026, 3, 11), TODAY)),
    ("過去3ヶ月間", (D(2025, 12, 18), TODAY)),
    # Japanese months and days: the most recent one that is not in the future
    ("6月", month(2025, 6)),
    ("3月", month(2026, 3)),
    ("4月", month(2025, 4)),
    ("１２月", month(2025, 12)),
    ("十二月", month(2025, 12)),
    ("一月", month(2026, 1)),
    ("3月5日", day(D(2026, 3, 5))),
    ("3月19日", day(D(2025, 3, 19))),
    ("12月25日", day(D(2025, 12, 25))),
    ("3月上旬", (D(2026, 3, 1), D(2026, 3, 10))),
    ("1月中旬", (D(2026, 1, 11), D(2026, 1, 20))),
    ("2月下旬", (D(2026, 2, 21), D(2026, 2, 28))),
    ("2025年", year(2025)),
    ("2025年6月", month(2025, 6)),
    ("2025年12月31日", day(D(2025, 12, 31))),
    # English
    ("today", day(TODAY)),
    ("Today", day(TODAY)),
    ("yesterday", day(D(2026, 3, 17))),
    ("the day before yesterday", day(D(2026, 3, 16))),
    ("last week", (D(2026, 3, 9), D(2026, 3, 15))),
    ("this week", (D(2026, 3, 16), D(2026, 3, 22))),
    ("last weekend", (D(2026, 3, 14), D(2026, 3, 15))),
    ("last month", month(2026, 2)),
    ("LAST MONTH", month(2026, 2)),
    ("this month", month(2026, 3)),
    ("last year", year(2025)),
    ("this year", year(2026)),
    ("recently", (D(2026, 2, 16), TODAY)),
    ("lately", (D(2026, 2, 16), TODAY)),
    ("a while ago", (D(2026, 1, 17), D(2026, 3, 11))),
    ("3 days ago", day(D(2026, 3, 15))),
    ("32 days ago", day(D(2026, 2, 14))),
    ("a day ago", day(D(2026, 3, 17))),
    ("a week ago", (D(2026, 3, 9), D(2026, 3, 15))),
    ("two weeks ago", (D(2026, 3, 2), D(2026, 3, 8))),
    ("a month ago", month(2026, 2)),
    ("3 months ago", month(2025, 12)),
    ("an year ago", year(2025)),
    ("2 years ago", year(2024)),
    ("last 7 days", (D(2026, 3, 11), TODAY)),
    ("past 3 months", (D(2025, 12, 18), TODAY)),
    ("past week", (D(2026, 3, 11), TODAY)),
    ("in June", month(2025, 6)),
    ("in Jun", month(2025, 6)),
    ("in March", month(2026, 3)),
    ("in May", month(2025, 5)),
    ("in Sept", month(2025, 9)),
    ("in March 2025", month(2025, 3)),
    ("March 2025", month(2025, 3)),
    ("Dec, 2024", month(2024, 12)),
    ("in 2024", year(2024)),
    # Bounds open one end of the period
    ("先月から", (D(2026, 2, 1), None)),
    ("先月以降", (D(2026, 2, 1), None)),
    ("3月まで", (None, D(2026, 3, 31))),
    ("去年以前", (None, D(2025, 12, 31))),
    ("since last month", (D(2026, 2, 1), None)),
    ("since 2024", (D(2024, 1, 1), None)),
    ("before 2024", (None, D(2023, 12, 31))),
    ("during May", month(2025, 5)),
    ("until last week", (None, D(2026, 3, 15))),
    ("before yesterday", (None, D(2026, 3, 16))),
    ("after last week", (D(2026, 3, 16), None)),
]


@pytest.mark.parametrize(("query", "expected"), RANGES, ids=[q for q, _ in RANGES])
def test_expression_alone_becomes_a_range_and_leaves_no_text(
    query: str, expected: tuple[date | None, date | None]
) -> None:
    remaining, found = extract_dates(query, TODAY)
    assert found is not None
    assert (found.after, found.before) == expected
    assert remaining == ""


NOT_DATES = [
    "13月のメモ",  # no such month
    "0月の予定",
    "2月30日のメモ",  # no such day: the month alone must not fire either
    "in Smarch",
    "in Foo 2025",
    "todays notes",
    "ago",
    "last",
    "the last straw",
    "what may happen",  # the modal verb
    "may 5th deadline",
    "March on Rome",  # a verb or a name without "in" or a year
    "a memo from March",
    "月曜日の会議",
    "月曜の定例",
    "五月雨",
    "2027年の計画",  # future years are topics
    "in 2048 bytes",
    "2026年度の予算",  # FY2026 begins on 1 April 2026
    "1000年前の歴史",
    "最近傍探索",  # nearest-neighbour search
    "年末調整の書類",
    "今月号の特集",
    "今日本で話題",  # 今 + 日本
    "gitlast month",
    "1ヶ月",  # a duration, not a date
    "三日月",
    "",
]


@pytest.mark.parametrize("query", NOT_DATES)
def test_non_expressions_leave_the_query_untouched(query: str) -> None:
    assert extract_dates(query, TODAY) == (query, None)


REMOVALS = [
    ("先月の狩猟の記録", "狩猟の記録", "先月"),
    ("what did I write about git last month", "what did I write about git", "last month"),
    ("what did I write last month?", "what did I write?", "last month"),
    ("notes from last week", "notes", "last week"),
    ("notes from the past week on sqlite", "notes on sqlite", "past week"),
    ("last month's notes on git", "notes on git", "last month"),
    ("Last Month notes", "notes", "Last Month"),
    ("  last month  ", "", "last month"),
    ("先月", "", "先月"),
    ("6月の会議メモ", "会議メモ", "6月"),
    ("3ヶ月前に書いた設計", "書いた設計", "3ヶ月前"),
    ("先月、狩猟の記録", "狩猟の記録", "先月"),
    ("狩猟の記録を先月", "狩猟の記録", "先月"),
    ("git 先月 メモ", "git メモ", "先月"),
    ("git先月notes", "git notes", "先月"),
    ("狩猟について先月書いたメモ", "狩猟について書いたメモ", "先月"),
    ("今日はじめて書いた", "はじめて書いた", "今日"),
    ("去年からの懸案", "懸案", "去年から"),
    ("先月と去年の記録", "去年の記録", "先月"),  # only the first expression is used
    ("sqlite notes since March 2025", "sqlite notes", "since March 2025"),
    ("2025年前半の振り返り", "前半の振り返り", "2025年"),
]


@pytest.mark.parametrize(("query", "remaining", "expression"), REMOVALS)
def test_removal_is_tidy(query: str, remaining: str, expression: str) -> None:
    left, found = extract_dates(query, TODAY)
    assert left == remaining
    assert found is not None and found.expression == expression


def test_first_valid_expression_wins_and_invalid_ones_are_skipped() -> None:
    left, found = extract_dates("13月 と 先月 のメモ", TODAY)
    assert found == DateRange(D(2026, 2, 1), D(2026, 2, 28), "先月")
    assert left == "13月 と メモ"


@pytest.mark.parametrize(
    ("today", "query", "expected"),
    [
        # January: last month and last year's December
        (D(2026, 1, 10), "先月", month(2025, 12)),
        (D(2026, 1, 10), "last month", month(2025, 12)),
        (D(2026, 1, 10), "3ヶ月前", month(2025, 10)),
        (D(2026, 1, 10), "12月", month(2025, 12)),
        (D(2026, 1, 10), "年末", month(2025, 12)),
        (D(2026, 1, 10), "年始", (D(2026, 1, 1), D(2026, 1, 15))),
        (D(2026, 1, 10), "先週", (D(2025, 12, 29), D(2026, 1, 4))),
        # December: this year's year-end has begun
        (D(2025, 12, 20), "年末", month(2025, 12)),
        (D(2025, 12, 20), "年末年始", (D(2025, 12, 1), D(2026, 1, 15))),
        (D(2025, 12, 20), "12月", month(2025, 12)),
        # Leap years and month lengths
        (D(2024, 3, 31), "先月", month(2024, 2)),
        (D(2024, 3, 31), "1ヶ月前", (D(2024, 2, 1), D(2024, 2, 29))),
        (D(2026, 3, 31), "2ヶ月前", month(2026, 1)),
        (D(2026, 3, 31), "1ヶ月前", (D(2026, 2, 1), D(2026, 2, 28))),
        (D(2026, 3, 31), "最近", (D(2026, 3, 1), D(2026, 3, 31))),
        (D(2026, 3, 31), "last 1 month", (D(2026, 2, 28), D(2026, 3, 31))),
        (D(2024, 2, 29), "1年前", year(2023)),
        (TODAY, "2月29日", day(D(2024, 2, 29))),
        (TODAY, "2024年2月29日", day(D(2024, 2, 29))),
        # The past-year rule at the month's edges
        (D(2026, 3, 1), "3月", month(2026, 3)),
        (D(2026, 3, 31), "4月", month(2025, 4)),
        (D(2026, 3, 31), "in April", month(2025, 4)),
        (D(2026, 3, 18), "6月の", month(2025, 6)),
        # Fiscal year turns over in April
        (D(2026, 4, 1), "今年度", (D(2026, 4, 1), D(2027, 3, 31))),
        # Sunday and Monday belong to the week they end or start
        (D(2026, 3, 22), "先週", (D(2026, 3, 9), D(2026, 3, 15))),
        (D(2026, 3, 23), "先週", (D(2026, 3, 16), D(2026, 3, 22))),
    ],
)
def test_calendar_edges(today: date, query: str, expected: tuple[date | None, date | None]) -> None:
    _, found = extract_dates(query, today)
    assert found is not None
    assert (found.after, found.before) == expected


def test_long_prompts_stay_fast() -> None:
    """The hook passes whole prompts; a run of prepositions once made the tidy-up quadratic."""
    query = "from the " * 7000 + "notes last month"
    started = time.perf_counter()
    left, found = extract_dates(query, TODAY)
    assert time.perf_counter() - started < 1.0
    assert found is not None and left.endswith("from the notes")


def test_module_never_reads_the_clock() -> None:
    """today is injected so that results are reproducible; the module must not look it up."""
    source = inspect.getsource(dates)
    assert "today()" not in source and ".now(" not in source


@pytest.mark.parametrize(
    ("value", "end", "expected"),
    [
        ("2025", False, D(2025, 1, 1)),
        ("2025", True, D(2025, 12, 31)),
        ("2025-02", False, D(2025, 2, 1)),
        ("2025-02", True, D(2025, 2, 28)),
        ("2024-02", True, D(2024, 2, 29)),
        ("2025-04", True, D(2025, 4, 30)),
        ("2025-3", True, D(2025, 3, 31)),
        ("2025-03-18", False, D(2025, 3, 18)),
        ("2025-03-18", True, D(2025, 3, 18)),
        (" 2024-02-29 ", True, D(2024, 2, 29)),
    ],
)
def test_parse_date_flag(value: str, end: bool, expected: date) -> None:
    assert parse_date_flag(value, end=end) == expected


@pytest.mark.parametrize(
    "value",
    [
        "",
        "abc",
        "25-01",
        "2025/01/01",
        "2025-13",
        "2025-00",
        "2025-02-30",
        "2023-02-29",
        "2025-03-18T10:00",
        "0000",
        "２０２５",
    ],
)
def test_parse_date_flag_rejects_with_an_example(value: str) -> None:
    with pytest.raises(ValueError, match=r"e\.g\. 2025, 2025-03 or 2025-03-18"):
        parse_date_flag(value, end=False)


@pytest.mark.parametrize(
    ("value", "today", "expected"),
    [
        ("30d", TODAY, D(2026, 2, 16)),
        ("1d", TODAY, D(2026, 3, 17)),
        ("2w", TODAY, D(2026, 3, 4)),
        ("3m", TODAY, D(2025, 12, 18)),
        ("3M", TODAY, D(2025, 12, 18)),
        ("1y", TODAY, D(2025, 3, 18)),
        ("1m", D(2026, 3, 31), D(2026, 2, 28)),
        ("1m", D(2024, 3, 31), D(2024, 2, 29)),
        ("1y", D(2024, 2, 29), D(2023, 2, 28)),
        ("12m", TODAY, D(2025, 3, 18)),
    ],
)
def test_parse_recent(value: str, today: date, expected: date) -> None:
    assert parse_recent(value, today) == expected


@pytest.mark.parametrize(
    "value", ["", "30", "d", "30x", "-3d", "0d", "3 months", "1.5m", "99999999999d", "9999y"]
)
def test_parse_recent_rejects_with_an_example(value: str) -> None:
    with pytest.raises(ValueError, match="e.g. --recent 30d"):
        parse_recent(value, TODAY)
