from gemini_relay.core.tokens import TokenMethod, estimate_tokens, estimated


def test_an_estimate_is_four_characters_a_token_rounded_up() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2


def test_an_estimate_says_it_is_one() -> None:
    count = estimated("x" * 40)
    assert count.tokens == 10
    assert count.method is TokenMethod.ESTIMATED
    assert "estimated" in count.method.label
