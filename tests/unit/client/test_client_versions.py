"""Version negotiation: the highest version both sides speak, nothing without overlap."""

from __future__ import annotations

from client.versions import CLIENT_VERSIONS, negotiate, retry_version
from protocol import SUPPORTED_VERSIONS, ApiKey


def test_picks_the_lower_of_the_two_maximums() -> None:
    client = {0: (3, 9), 1: (4, 12)}
    assert negotiate([(0, 0, 11), (1, 4, 7)], client) == {0: 9, 1: 7}


def test_no_overlap_and_unknown_apis_are_left_out() -> None:
    client = {0: (3, 9), 1: (4, 12)}
    broker = [(0, 0, 2), (1, 13, 17), (99, 0, 5)]
    assert negotiate(broker, client) == {}


def test_against_minikafkas_own_matrix_every_client_api_has_a_version() -> None:
    broker = [(k, lo, hi) for k, (lo, hi) in SUPPORTED_VERSIONS.items()]
    chosen = negotiate(broker)
    assert set(chosen) == set(CLIENT_VERSIONS)
    assert chosen[ApiKey.FETCH] == 12 and chosen[ApiKey.PRODUCE] == 9
    assert chosen[ApiKey.METADATA] == 12 and chosen[ApiKey.API_VERSIONS] == 3


def test_retry_version_after_unsupported_version() -> None:
    assert retry_version([(ApiKey.API_VERSIONS, 0, 2)]) == 2
    assert retry_version([(ApiKey.PRODUCE, 0, 9)]) is None
