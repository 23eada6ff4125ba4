"""cache_first.py: two cells load the same user through one memory cache.
The first load calls the loader and stores its value; the second finds a
fresh entry and shows it flagged FROM_CACHE, without calling the loader."""
import loadstate

calls = 0

with loadstate.Runtime() as rt:
    @rt.loader(codec=loadstate.JSON)
    def user(job):
        global calls
        calls += 1
        return {"id": job.request, "name": "Ada"}

    with rt.memory_cache(max_entries=100, codec=loadstate.JSON) as cache:
        for name in ("profile", "sidebar"):
            cell = rt.loadable(user, request_codec=loadstate.JSON)
            load = cell.load(7, cache=cache, cache_key="user:7",
                             policy=loadstate.CachePolicy.CACHE_FIRST, fresh=60)
            state = load.state(timeout=10)
            print(f"{name}: {state.value} from cache: {state.from_cache}")
        print("loader calls:", calls)
        print("cached:", cache["user:7"])
