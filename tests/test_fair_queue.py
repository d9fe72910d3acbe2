"""The fair render queue: turns per account and link, caps, cancellation, timeout penalty."""

from __future__ import annotations

import pytest

from render.pool.fair_queue import (
    AccountBusy,
    ClientBusy,
    FairQueue,
    FairQueueLimits,
    LinkBusy,
    QueueFull,
)
from vaultd.errors import ServiceUnavailable, TooManyRequests
from vaultd.services.common.pool_calls import queue_refusal

ROOMY = FairQueueLimits(max_queued=1000, max_per_link=1000, max_per_ip=1000,
                        max_waiting_per_account=1000, timeout_penalty=4)


def drain(queue: FairQueue[str]) -> list[str]:
    order = []
    while (task := queue.pop()) is not None:
        order.append(task)
        queue.done(task, 0.01, timed_out=False)
    return order


def test_a_burst_from_one_account_leaves_another_accounts_task_next() -> None:
    queue: FairQueue[str] = FairQueue(ROOMY)
    for i in range(50):
        queue.push(f"heavy-{i}", "acme", "link-a", f"10.0.0.{i % 200}")
    assert queue.pop() == "heavy-0"  # the burst already holds the worker
    queue.push("light", "globex", "link-g", "10.9.9.9")
    assert queue.pop() == "light"


def test_a_burst_on_one_link_leaves_another_link_of_the_same_account_next() -> None:
    queue: FairQueue[str] = FairQueue(ROOMY)
    for i in range(20):
        queue.push(f"a{i}", "acme", "leaked-link", "10.0.0.1")
    queue.push("b0", "acme", "other-link", "10.0.0.2")
    assert queue.pop() == "a0"
    assert queue.pop() == "b0"


def test_accounts_are_served_in_turn_and_each_accounts_links_in_turn() -> None:
    queue: FairQueue[str] = FairQueue(ROOMY)
    for task, account, link in [("a1", "A", "x"), ("a2", "A", "x"), ("a3", "A", "y"),
                                ("b1", "B", "z"), ("b2", "B", "z"), ("c1", "C", "w")]:
        queue.push(task, account, link, "1.1.1.1")
    assert drain(queue) == ["a1", "b1", "c1", "a3", "b2", "a2"]
    assert queue.queued == 0 and queue.running == 0 and queue.in_flight() == 0


def test_a_link_past_its_cap_is_refused_with_429_and_nothing_changes() -> None:
    queue: FairQueue[str] = FairQueue(FairQueueLimits(max_per_link=2, max_per_ip=100))
    queue.push("t1", "A", "x", "1.1.1.1")
    queue.push("t2", "A", "x", "1.1.1.2")
    with pytest.raises(LinkBusy, match="too many pages of this link") as refused:
        queue.push("t3", "A", "x", "1.1.1.3")
    assert refused.value.status == 429
    assert queue.queued == 2 and queue.waiting_for(ip="1.1.1.3") == 0
    # The cap bounds the waiting: a task taken by a worker frees its place in the line.
    task = queue.pop()
    assert task == "t1"
    queue.push("t3", "A", "x", "1.1.1.3")
    assert queue.waiting_for(link="x") == 2 and queue.in_flight() == 3
    with pytest.raises(LinkBusy):
        queue.push("t4", "A", "x", "1.1.1.4")
    queue.done(task, 0.1, timed_out=False)  # nor does its end change the waiting count
    assert queue.waiting_for(link="x") == 2


def test_a_burst_of_one_link_up_to_the_cap_is_queued_not_refused() -> None:
    queue: FairQueue[str] = FairQueue(FairQueueLimits(max_queued=1000))
    for i in range(64):  # the default cap: 64 waiting per link (and per IP)
        queue.push(f"page-{i}", "A", "x", "1.1.1.1")
    with pytest.raises(LinkBusy):
        queue.push("page-64", "A", "x", "1.1.1.1")
    assert drain(queue) == [f"page-{i}" for i in range(64)]


def test_a_client_ip_past_its_cap_is_refused_across_links_and_accounts() -> None:
    queue: FairQueue[str] = FairQueue(FairQueueLimits(max_per_link=100, max_per_ip=2))
    queue.push("t1", "A", "x", "6.6.6.6")
    queue.push("t2", "B", "y", "6.6.6.6")
    with pytest.raises(ClientBusy, match="from this address") as refused:
        queue.push("t3", "C", "z", "6.6.6.6")
    assert refused.value.status == 429
    queue.push("t4", "C", "z", "7.7.7.7")  # another address is not affected
    assert queue.pop() == "t1"  # running: no longer waiting under its address
    queue.push("t3", "C", "z", "6.6.6.6")


def test_an_account_past_its_waiting_cap_is_refused_across_links_and_addresses() -> None:
    queue: FairQueue[str] = FairQueue(FairQueueLimits(max_queued=10, max_per_link=100,
                                                      max_per_ip=100, max_waiting_per_account=3))
    for i in range(3):  # each on a link and address of its own: only the account's cap counts
        queue.push(f"a{i}", "A", f"link-{i}", f"1.1.1.{i}")
    with pytest.raises(AccountBusy) as refused:
        queue.push("a3", "A", "link-3", "1.1.1.3")
    assert str(refused.value) == "too many renders of this account are waiting; retry shortly"
    assert refused.value.status == 429 and refused.value.retry_after == 1
    assert queue.queued == 3 and queue.waiting_for(link="link-3") == 0
    queue.push("b0", "B", "link-b", "1.1.1.1")  # another account still gets its place
    assert queue.pop() == "a0"  # running: no longer waiting against the account's cap
    queue.push("a3", "A", "link-3", "1.1.1.3")
    with pytest.raises(AccountBusy):
        queue.push("a4", "A", "link-4", "1.1.1.4")
    assert queue.cancel("a1") is True  # a dropped task frees its place too
    queue.push("a4", "A", "link-4", "1.1.1.4")


def test_a_full_queue_is_refused_with_503() -> None:
    queue: FairQueue[str] = FairQueue(FairQueueLimits(max_queued=2))
    queue.push("t1", "A", "x", "1.1.1.1")
    queue.push("t2", "B", "y", "1.1.1.2")
    with pytest.raises(QueueFull, match="server busy") as refused:
        queue.push("t3", "C", "z", "1.1.1.3")
    assert refused.value.status == 503 and refused.value.retry_after >= 1
    queue.pop()  # running tasks do not take queue slots
    queue.push("t3", "C", "z", "1.1.1.3")


def test_a_cancelled_task_never_runs_and_frees_its_slots() -> None:
    queue: FairQueue[str] = FairQueue(FairQueueLimits(max_per_link=2))
    queue.push("gone", "A", "x", "1.1.1.1")
    queue.push("stays", "A", "x", "1.1.1.1")
    assert queue.cancel("gone") is True
    assert queue.cancel("gone") is False  # a second cancel is a no-op
    assert queue.waiting_for(link="x") == 1 and queue.waiting_for(ip="1.1.1.1") == 1
    assert drain(queue) == ["stays"]


def test_cancelling_the_last_task_of_an_account_removes_it_from_the_rotation() -> None:
    queue: FairQueue[str] = FairQueue(ROOMY)
    queue.push("a1", "A", "x", "1.1.1.1")
    queue.push("b1", "B", "y", "1.1.1.1")
    assert queue.cancel("a1")
    assert drain(queue) == ["b1"]
    assert queue.pop() is None


def test_a_running_task_cannot_be_cancelled_but_is_released_when_done() -> None:
    queue: FairQueue[str] = FairQueue(ROOMY)
    queue.push("t", "A", "x", "1.1.1.1")
    assert queue.pop() == "t"
    assert queue.cancel("t") is False
    assert queue.running == 1
    queue.done("t", 1.0, timed_out=False)
    assert queue.running == 0 and queue.in_flight() == 0


def test_a_timed_out_account_is_passed_over_for_its_penalty_in_turns() -> None:
    queue: FairQueue[str] = FairQueue(FairQueueLimits(timeout_penalty=2, max_per_link=100))
    queue.push("slow", "A", "x", "1.1.1.1")
    assert queue.pop() == "slow"
    queue.done("slow", 5.0, timed_out=True)
    assert queue.debt("A") == 2
    for i in range(3):
        queue.push(f"a{i}", "A", "x", "1.1.1.1")
        queue.push(f"b{i}", "B", "y", "2.2.2.2")
    # B's turn first (A was served last), then A is passed over twice, paying its debt.
    assert drain(queue) == ["b0", "b1", "b2", "a0", "a1", "a2"]
    assert queue.debt("A") == 0


def test_an_indebted_account_alone_is_still_served() -> None:
    queue: FairQueue[str] = FairQueue(FairQueueLimits(timeout_penalty=5))
    queue.push("slow", "A", "x", "1.1.1.1")
    queue.done(queue.pop() or "", 30.0, timed_out=True)
    queue.push("next", "A", "x", "1.1.1.1")
    assert queue.pop() == "next"
    assert queue.debt("A") == 4


def test_the_same_task_cannot_be_queued_twice() -> None:
    queue: FairQueue[str] = FairQueue()
    queue.push("t", "A", "x", "1.1.1.1")
    with pytest.raises(ValueError, match="already queued"):
        queue.push("t", "A", "x", "1.1.1.1")


def test_done_on_a_waiting_task_is_an_error() -> None:
    queue: FairQueue[str] = FairQueue()
    queue.push("t", "A", "x", "1.1.1.1")
    with pytest.raises(ValueError, match="use cancel"):
        queue.done("t", 0.0, timed_out=False)


def test_with_many_accounts_each_waits_at_most_one_round() -> None:
    queue: FairQueue[str] = FairQueue(ROOMY)
    for account in range(10):
        for i in range(10):
            queue.push(f"{account}-{i}", f"acct{account}", f"link{account}", "1.1.1.1")
    queue.push("victim", "victim", "v", "9.9.9.9")
    order = drain(queue)
    assert order.index("victim") <= 10  # one round of the 10 bursting accounts at most
    assert len(order) == 101


def test_refusals_map_to_429_for_the_callers_share_and_503_for_a_full_queue() -> None:
    busy_link = queue_refusal(LinkBusy("too many pages of this link are being rendered"))
    assert isinstance(busy_link, TooManyRequests) and busy_link.status == 429
    assert busy_link.message == "too many pages of this link are being rendered"
    assert isinstance(queue_refusal(ClientBusy("x")), TooManyRequests)
    assert isinstance(queue_refusal(AccountBusy("x")), TooManyRequests)
    full = queue_refusal(QueueFull("server busy; retry shortly"))
    assert isinstance(full, ServiceUnavailable) and full.status == 503 and full.retry_after == 1


def test_a_running_cap_per_account_keeps_a_worker_for_the_others() -> None:
    queue: FairQueue[str] = FairQueue(FairQueueLimits(max_running_per_account=1))
    for i in range(5):
        queue.push(f"heavy-{i}", "acme", f"link-{i}", "10.0.0.1")
    assert queue.pop() == "heavy-0"
    assert queue.pop() is None  # acme already runs its share: the second worker stays free
    queue.push("light", "globex", "link-g", "10.9.9.9")
    assert queue.pop() == "light"  # and the newcomer gets it at once
    queue.done("heavy-0", 3.0, timed_out=False)
    assert queue.pop() == "heavy-1"
    queue.done("light", 0.03, timed_out=False)
    assert queue.pop() is None and queue.queued == 3


def test_an_account_of_short_renders_borrows_the_reserved_worker_and_a_heavy_one_does_not() -> None:
    queue: FairQueue[str] = FairQueue(FairQueueLimits(max_running_per_account=1))
    for i in range(3):
        queue.push(f"light-{i}", "acme", "link-a", "10.0.0.1")
    assert queue.pop() == "light-0"
    assert queue.pop() is None  # never measured: no borrowing yet
    queue.done("light-0", 0.02, timed_out=False)
    assert queue.pop() == "light-1"
    assert queue.pop() == "light-2"  # short renders: one account alone keeps both workers busy
    for i in range(3):
        queue.push(f"heavy-{i}", "globex", "link-g", "10.9.9.9")
    assert queue.pop() == "heavy-0"
    queue.done("heavy-0", 3.0, timed_out=False)
    assert queue.pop() == "heavy-1"
    assert queue.pop() is None  # 3 s renders: the reserve stays free for others


def test_a_task_that_never_ran_does_not_make_its_account_look_quick() -> None:
    queue: FairQueue[str] = FairQueue(FairQueueLimits(max_running_per_account=1))
    for i in range(3):
        queue.push(f"heavy-{i}", "acme", f"link-{i}", "10.0.0.1")
    assert queue.pop() == "heavy-0"
    queue.done("heavy-0", 0.0, timed_out=False)  # handed out, then its client left
    assert queue.pop() == "heavy-1"
    assert queue.pop() is None
