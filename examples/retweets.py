"""The shingling write-up's scenario: index a stream of short posts, then ask which stored post a
retweet repeats ("RT @user:" in front, a comment after) and check that a post never repeated
matches nothing. Run: python examples/retweets.py"""

from __future__ import annotations

from neardup import DedupParams, Index, SampledParams
from neardup.testing.synth import random_documents

posts = random_documents(10_000, seed=7, words=(15, 40))  # a stream of short posts
index = Index.create(None, DedupParams(method=SampledParams(), threshold=0.8))
for start in range(0, len(posts), 1000):  # posts arrive in batches
    index.add([f"post{i}" for i in range(start, start + 1000)], posts[start : start + 1000])

retweet = f"RT @alice: {posts[1234]} this is so true"
never = random_documents(1, seed=99, words=(20, 30))[0]
for text in (retweet, never):
    matches = index.query([text])[0]
    print(text[:60] + "...")
    for m in matches:
        print(
            f"   {m.id}: containment {m.scores['query_in_doc']:.2f} of the retweet in the post, "
            f"{m.scores['doc_in_query']:.2f} of the post in the retweet ({m.kind})"
        )
    if not matches:
        print("   no stored post")
