"""The statements both engines share (`coop/memory/storage/sql.py`): written once with `$1` .. `$n`, run as
written on SQLite and on Postgres, the few differences asked of the engine's `Dialect`."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coop.memory.storage.sql import dialect_of, marks

ON_BOTH = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40)


@ON_BOTH
@given(first=TEXT, second=st.integers(-2**62, 2**62))
def test_a_number_binds_its_own_value_in_any_order_and_twice(memory, first, second):
    row = memory.db.one("SELECT CAST($2 AS BIGINT), CAST($1 AS TEXT), CAST($2 AS BIGINT) + 1, "
                        "CAST($1 AS TEXT) = CAST($1 AS TEXT)", (first, second))
    assert tuple(row) == (second, first, second + 1, 1) or tuple(row) == (second, first, second + 1, True)


def test_a_literal_holding_a_question_mark_a_percent_or_a_dollar_is_left_as_written(memory):
    row = memory.db.one("SELECT 'why?', '100%', '$1 and ?2', CAST($1 AS TEXT)", ("ana's",))
    assert tuple(row) == ("why?", "100%", "$1 and ?2", "ana's")


def test_booleans_are_stored_as_the_integers_both_schemas_hold(memory):
    memory.ensure_user()
    memory.db.execute("UPDATE users SET reviewed_at = $1 WHERE id = $2", (True, memory.user_id))
    assert memory.db.scalar("SELECT reviewed_at FROM users WHERE id = $1", (memory.user_id,)) == 1


def test_each_piece_that_differs_means_the_same_on_both_engines(memory):
    sql = dialect_of(memory.db)
    row = memory.db.one(f"SELECT {sql.greatest}(CAST($1 AS BIGINT), 7), {sql.greatest}(CAST($2 AS BIGINT), 7), "
                        f"{sql.position}(CAST($3 AS TEXT), 'cd'), {sql.position}(CAST($3 AS TEXT), 'zz')",
                        (3, 9, "abcdef"))
    assert tuple(row) == (7, 9, 3, 0)
    memory.ensure_user()
    memory.db.execute(f"SELECT count(*) FROM users WHERE {sql.no_index}id = $1", (memory.user_id,))


def test_a_new_row_never_takes_the_id_of_a_forgotten_one(memory):
    first = memory.facts.add("Lives in Zagreb").fact_id
    memory.forget("fact", first)
    second = memory.facts.add("Works as a welder").fact_id
    assert second > first


def test_an_in_list_binds_after_the_values_before_it(memory):
    ids = [memory.facts.add(f"Fact number {n}").fact_id for n in range(5)]
    found = memory.db.execute(f"SELECT id FROM facts WHERE user_id = $1 AND id IN ({marks(3, first=2)}) ORDER BY id",
                              (memory.user_id, *ids[1:4]))
    assert [int(r[0]) for r in found] == ids[1:4]


@pytest.mark.parametrize("count", [1, 2, 500])
def test_marks_numbers_each_place_once(count):
    text = marks(count, first=4)
    assert text.split(",") == [f"${n}" for n in range(4, 4 + count)]


@ON_BOTH
@given(values=st.lists(st.integers(-1000, 1000), min_size=1, max_size=6), data=st.data())
def test_any_order_of_numbers_binds_each_its_own_value(memory, values, data):
    """In order ($1, $2, ...) SQLite takes the values as given; any other order is bound by name: both right."""
    order = data.draw(st.permutations(range(1, len(values) + 1)))
    columns = ", ".join(f"CAST(${n} AS BIGINT)" for n in order)
    assert tuple(memory.db.one(f"SELECT {columns}", tuple(values))) == tuple(values[n - 1] for n in order)
