"""Random names as MLflow generates them (``mlflow/utils/name_utils._generate_random_name``).

Shared by runs (a run without a name) and logged models (a model without a name):
``<predicate>-<noun>-<0..1000>``, at most 20 characters, from the same word lists.
(Moved here from ``functions/runs/names.py`` so both features use one copy.)
"""

from __future__ import annotations

import random

MAX_LENGTH = 20
INTEGER_SCALE = 3


def _generate_string(sep: str, integer_scale: int) -> str:
    predicate = random.choice(PREDICATES).lower()
    noun = random.choice(NOUNS).lower()
    num = random.randint(0, 10**integer_scale)
    return f"{predicate}{sep}{noun}{sep}{num}"


def random_name(sep: str = "-", integer_scale: int = INTEGER_SCALE, max_length: int = MAX_LENGTH) -> str:
    name = ""
    for _ in range(10):
        name = _generate_string(sep, integer_scale)
        if len(name) <= max_length:
            return name
    return name[:max_length]


NOUNS = (
    'ant', 'ape', 'asp', 'auk', 'bass', 'bat', 'bear', 'bee', 'bird', 'boar', 'bug', 'calf', 'carp', 'cat',
    'chimp', 'cod', 'colt', 'conch', 'cow', 'crab', 'crane', 'croc', 'crow', 'cub', 'deer', 'doe', 'dog',
    'dolphin', 'donkey', 'dove', 'duck', 'eel', 'elk', 'fawn', 'finch', 'fish', 'flea', 'fly', 'foal', 'fowl',
    'fox', 'frog', 'gnat', 'gnu', 'goat', 'goose', 'grouse', 'grub', 'gull', 'hare', 'hawk', 'hen', 'hog',
    'horse', 'hound', 'jay', 'kit', 'kite', 'koi', 'lamb', 'lark', 'loon', 'lynx', 'mare', 'midge', 'mink',
    'mole', 'moose', 'moth', 'mouse', 'mule', 'newt', 'owl', 'ox', 'panda', 'penguin', 'perch', 'pig', 'pug',
    'quail', 'ram', 'rat', 'ray', 'robin', 'roo', 'rook', 'seal', 'shad', 'shark', 'sheep', 'shoat', 'shrew',
    'shrike', 'shrimp', 'skink', 'skunk', 'sloth', 'slug', 'smelt', 'snail', 'snake', 'snipe', 'sow', 'sponge',
    'squid', 'squirrel', 'stag', 'steed', 'stoat', 'stork', 'swan', 'tern', 'toad', 'trout', 'turtle', 'vole',
    'wasp', 'whale', 'wolf', 'worm', 'wren', 'yak', 'zebra',
)

PREDICATES = (
    'abundant', 'able', 'abrasive', 'adorable', 'adaptable', 'adventurous', 'aged', 'agreeable', 'ambitious',
    'amazing', 'amusing', 'angry', 'auspicious', 'awesome', 'bald', 'beautiful', 'bemused', 'bedecked', 'big',
    'bittersweet', 'blushing', 'bold', 'bouncy', 'brawny', 'bright', 'burly', 'bustling', 'calm', 'capable',
    'carefree', 'capricious', 'caring', 'casual', 'charming', 'chill', 'classy', 'clean', 'clumsy', 'colorful',
    'crawling', 'dapper', 'debonair', 'dashing', 'defiant', 'delicate', 'delightful', 'dazzling', 'efficient',
    'enchanting', 'entertaining', 'enthused', 'exultant', 'fearless', 'flawless', 'fortunate', 'fun', 'funny',
    'gaudy', 'gentle', 'gifted', 'glamorous', 'grandiose', 'gregarious', 'handsome', 'hilarious', 'honorable',
    'illustrious', 'incongruous', 'indecisive', 'industrious', 'intelligent', 'inquisitive', 'intrigued',
    'invincible', 'judicious', 'kindly', 'languid', 'learned', 'legendary', 'likeable', 'loud', 'luminous',
    'luxuriant', 'lyrical', 'magnificent', 'marvelous', 'masked', 'melodic', 'merciful', 'mercurial',
    'monumental', 'mysterious', 'nebulous', 'nervous', 'nimble', 'nosy', 'omniscient', 'orderly', 'overjoyed',
    'peaceful', 'painted', 'persistent', 'placid', 'polite', 'popular', 'powerful', 'puzzled', 'rambunctious',
    'rare', 'rebellious', 'respected', 'resilient', 'righteous', 'receptive', 'redolent', 'resilient', 'rogue',
    'rumbling', 'salty', 'sassy', 'secretive', 'selective', 'sedate', 'serious', 'shivering', 'skillful',
    'sincere', 'skittish', 'silent', 'smiling', 'sneaky', 'sophisticated', 'spiffy', 'stately', 'suave',
    'stylish', 'tasteful', 'thoughtful', 'thundering', 'traveling', 'treasured', 'trusting', 'unequaled', 'upset',
    'unique', 'unleashed', 'useful', 'upbeat', 'unruly', 'valuable', 'vaunted', 'victorious', 'welcoming',
    'whimsical', 'wistful', 'wise', 'worried', 'youthful', 'zealous',
)


# The runs feature's name for it.
random_run_name = random_name
