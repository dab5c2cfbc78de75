"""One engine replica stepping through time: the scheduler, the paged KV cache and the stats.

Each call to `Replica.step()` is one engine iteration: the scheduler fills a batch (running
decodes first, one token each; then prefill chunks of admitted prompts; then new admissions from
the waiting queue while sequences, tokens and KV blocks allow), the step's time comes from
`StepCost`, and then every decode emits a token, prompts that finished prefill emit their first
token, and sequences that reached their output length leave.

Per-step work is O(1) amortised in the number of running sequences: the decode set is never
walked. It keeps running sums (sequences, total depth, KV tokens in use), and each sequence's
finishing step is known when it starts decoding (every step emits one token per decode), so
finishes sit in buckets keyed by the decode-step counter. A preempted sequence is dropped from
its bucket lazily (its `finish_k` no longer matches).

KV accounting is in tokens: a sequence holds its prompt plus generated tokens plus, on average,
half a block of fragmentation. What the engine refuses, whom it admits and whom it evicts when the
next step's decode tokens would not fit is the engine's own memory rule (`policies.kv_rule`:
vLLM and LMDeploy preempt the newest by recompute, SGLang retracts and raises its new-token
ratio, TensorRT-LLM and static batches book each request's whole length and never evict,
llama.cpp gives each request a slot). A request whose prompt shares content with others (`content`)
asks the engine's prefix cache (`prefix_cache.py`) what it hits, which skips prefill, and what
running requests already hold, which it does not count again in KV. A request that could never run is refused when it arrives,
with its reason; a step that runs nothing is counted, and too many in a row raise
`SimulationStalled` (never a silent spin).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable

from tokometer.costmodel.serving.cost import StepCost
from tokometer.costmodel.serving.policies import UNSERVABLE, kv_rule, prefix_cache
from tokometer.costmodel.serving.prefix_cache import Content
from tokometer.costmodel.serving.request import Request
from tokometer.costmodel.serving.speculation import (
    Speculation,
    advance,
    decode_growth,
    draft_time_s,
    emit,
)
from tokometer.costmodel.serving.stats import StreamStat, Trace
from tokometer.domain.serving_specs import SchedulerPolicy
from tokometer.errors import SimulationStalled

BIG_BUDGET = 1 << 60
STALL_STEPS = 1000  # empty steps in a row a bare replica tolerates (`simulate` sizes it to the workload)

# What `record` keeps of each step: tokens carried, KV tokens read, attention pairs, sequences decoded,
# prompts that finished prefill and emit a token, and how many of those emit their request's first
# token (a prompt recomputed after preemption emits its next token, not a first one)
StepRecord = tuple[float, float, float, int, int, int]


class Replica:
    """A single engine instance (one replica: TP x PP devices) with its queue and statistics."""

    def __init__(
        self,
        cost: StepCost,
        policy: SchedulerPolicy,
        kv_capacity_tokens: float,
        *,
        on_finish: Callable[[float], None] | None = None,
        on_done: Callable[[Request, float], None] | None = None,
        slo_ttft_s: float | None = None,
        slo_tpot_s: float | None = None,
        record: list[StepRecord] | None = None,
        spec: Speculation | None = None,
    ) -> None:
        self.cost = cost
        self.policy = policy
        self.capacity = kv_capacity_tokens
        # half a block lost per sequence to paging; llama.cpp's slots are contiguous, so none
        self.frag = policy.block_size_tokens / 2.0 if policy.contiguous_context_tokens is None else 0.0
        # while decodes run, the scheduler admits prompts only every `admit_every` decode steps: when its
        # multi-step loop returns (`scheduler_steps`) and when it reads its queue (SGLang
        # --scheduler-recv-interval, `recv_interval_steps`): both, so every lcm of the two
        self.admit_every = math.lcm(policy.scheduler_steps, policy.recv_interval_steps)
        # TensorRT-LLM's attention-DP balance: prompts held until one waits per rank, or for this many steps
        self.balance_ranks = policy.adp_balance_ranks
        self.balance_timeout = policy.adp_balance_timeout_steps
        self.balance_held = 0  # steps in a row the balance has held the waiting prompts
        self.watermark = 0.01 * kv_capacity_tokens  # admission leaves 1 % free, as vLLM does, so decodes can grow
        self.rule = kv_rule(policy)
        self.admits = self.rule.admits
        self.reserves = self.rule.reserves
        self.admit_room = kv_capacity_tokens - self.watermark if self.rule.prompt_only else None
        self.always_taken = self.rule.always_taken(self)
        # the step's cost terms that are the same every step, computed once (the same arithmetic as per step)
        self.attention_peak = cost.compute_fraction_max * cost.peak_flops
        self.comm = bool(cost.comm_fixed_s or cost.comm_per_token_s or cost.comm_bulk_fixed_s or cost.comm_bulk_per_token_s)
        self.pcache = prefix_cache(policy, kv_capacity_tokens)  # decides hits for requests with `content`
        self.prompt_admitted = 0  # prompt tokens admitted with a prefix cache at play (readmissions too)
        self.hit_admitted = 0  # of which the prefix cache served
        self.reserved = 0.0  # tokens booked by a reserving rule (TensorRT-LLM, static, llama.cpp slots)
        self.owed = 0  # sum of remaining output: prefilling (output - generated) + decoding finish_k
        self.stalled = 0  # steps in a row that ran nothing and refused nothing
        self.stalled_at = 0  # `steps` when the count started
        self.growing = 0  # KV tokens the decodes of the step being scheduled will add
        self.stall_limit = STALL_STEPS
        self.workload_text = "not given"  # named in a SimulationStalled error
        self.on_finish = on_finish
        self.on_done = on_done
        self.slo_ttft = slo_ttft_s if slo_ttft_s is not None else math.inf
        self.slo_tpot = slo_tpot_s if slo_tpot_s is not None else math.inf
        self.record = record
        self.clock = 0.0
        self.waiting: deque[Request] = deque()
        self.prefilling: list[Request] = []
        self.order: list[Request] = []  # admission order, for LIFO preemption (compacted lazily)
        self.buckets: dict[int, list[Request]] = {}
        self.k = 0  # decode steps so far
        self.n_dec = 0
        self.n_running = 0
        self.depth_sum = 0.0
        self.kv_used = 0.0
        self.pause_s = 0.0  # time since the last decode step (prefill-only steps)
        # speculative decoding (speculation.py): each decode verifies `verify` tokens per pass and
        # advances by `grow` (E on average, the fraction carried in `spec_carry`); `k` counts tokens
        self.spec = spec
        self.verify = spec.draft_tokens + 1 if spec is not None else 1
        self.spec_tokens = spec.tokens_per_pass if spec is not None else 1.0
        self.spec_carry = 0.0
        self.grow = 1
        if spec is not None:
            advance(self)  # the first pass's count
        # statistics
        self.ttft = StreamStat()
        self.tpot = StreamStat()
        self.itl = StreamStat()
        self.e2e = StreamStat()
        self.queue = StreamStat()
        self.batch_trace = Trace()
        self.kv_trace = Trace()
        self.completed = 0
        self.good = 0
        self.rejected = 0
        self.refused: dict[str, int] = {}  # rejected, by reason
        self.truncated = 0  # requests the engine will cut short (llama.cpp: the slot filled up)
        self.output_done = 0  # output tokens of the completed requests
        self.preemptions = 0
        self.steps = 0
        self.tokens_out = 0
        self.tokens_in = 0
        self.busy_s = 0.0
        self.prefill_s = 0.0
        self.decode_s = 0.0
        self.bound_s = {"memory": 0.0, "compute": 0.0, "overhead": 0.0}
        self.batch_time = 0.0  # integral of running sequences over time
        self.kv_time = 0.0  # integral of KV tokens used over time
        self.first_arrival = math.inf
        self.last_finish = 0.0

    # ---------------------------------------------------------------- queue

    @property
    def outstanding(self) -> int:
        return len(self.waiting) + self.n_running

    @property
    def busy(self) -> bool:
        return bool(self.waiting) or self.n_running > 0

    def submit(
        self, arrival: float, prompt: int, output: int, *, ready: float | None = None, cached: int = 0,
        then_output: int = 0, content: Content | None = None,
    ) -> None:
        """Queue a request sent at `arrival` that this replica can take from `ready` (default: arrival).

        `cached`: prompt tokens whose K/V came with it (a disaggregated decode pool receives all but
        the last, which it computes to sample the first token). `then_output`: output tokens that
        another pool will generate after this one's prefill (kept for `on_done`). `content`: what
        its prompt shares with others, for the prefix cache (`prefix_cache`) and the next turn.
        """
        if arrival < self.first_arrival:
            self.first_arrival = arrival
        if prompt < 1:  # max(1, prompt) without the builtin call (it runs per request)
            prompt = 1
        if prompt + output > self.always_taken:  # the rule may refuse or cut it short
            reason = self.rule.refusal(self, prompt, output)
            if reason is not None:
                self.refuse(reason)
                return
            allowed = self.rule.output_tokens(self, prompt, output)
            if allowed < output:
                self.truncated += 1
                output = allowed
        at = arrival if ready is None else ready
        if self.clock < at and not self.busy:  # the clock test first: a busy replica is mostly past `at`
            self.clock = at
        req = Request(arrival, prompt, output, ready)
        if cached or then_output:
            req.cached = min(cached, req.prompt - 1)
            req.then_output = then_output
        req.content = content
        self.waiting.append(req)

    # ---------------------------------------------------------------- one step

    def refuse(self, reason: str) -> None:
        """Count a request that will never run here, with its reason."""
        self.rejected += 1
        self.refused[reason] = self.refused.get(reason, 0) + 1

    def decoding(self) -> list[Request]:
        """The running requests that decode, oldest admitted first (O(n): eviction only)."""
        return [r for r in self.order if r.finish_k >= 0]

    def generated_of(self, req: Request) -> int:
        """Output tokens `req` has generated so far (a decoding request gains one per decode step)."""
        return req.generated + (self.k - req.join_k if req.finish_k >= 0 else 0)

    def remaining_output(self) -> int:
        """Output tokens the running requests have still to generate."""
        return self.owed - self.n_dec * self.k

    def growth(self) -> int:
        """KV tokens the running decodes add in the next decode step (one each without speculation)."""
        return self.n_dec if self.spec is None else decode_growth(self)

    def newest_decoding(self) -> Request:
        """The most recently admitted decoding request (forgets finished ones on the way)."""
        order = self.order
        for idx in range(len(order) - 1, -1, -1):
            req = order[idx]
            if req.finish_k >= 0:
                return req
            if req.todo == 0:
                del order[idx]  # finished: forget it
        raise AssertionError("no request decodes")

    def preempt(self, req: Request, *, front: bool = True) -> None:
        """Evict the decoding `req` by recompute: free its KV and queue it again (at the front, or the
        back) with its prompt extended by what it generated."""
        self.order.remove(req)
        decoded = self.k - req.join_k
        held = req.prompt + decoded
        self.depth_sum -= held
        self.free_kv(req, held, finished=False)
        self.n_dec -= 1
        self.n_running -= 1
        self.owed -= req.finish_k
        if req.booked:
            self.reserved -= req.booked
            req.booked = 0.0
        req.finish_k = -1
        req.prompt = held + 1
        req.todo = req.prompt
        req.done = 0
        req.cached = 0  # its blocks are freed: the transferred K/V is recomputed too
        req.generated += decoded
        self.preemptions += 1
        if front:
            self.waiting.appendleft(req)
        else:
            self.waiting.append(req)

    def balanced(self) -> bool:
        """TensorRT-LLM's attention-DP context balance (`_balance_adp_requests` with `enable_balance`): may
        the waiting prompts be scheduled this step? Yes when some rank has nothing to decode (fewer
        decodes than ranks), or when a prompt waits for every rank; otherwise they are held, and let go
        after `adp_balance_timeout_steps` held steps in a row. Called once per step that could admit."""
        if not self.waiting or self.n_dec < self.balance_ranks or len(self.waiting) >= self.balance_ranks:
            self.balance_held = 0
            return True
        self.balance_held += 1
        if self.balance_held >= self.balance_timeout:
            self.balance_held = 0
            return True
        return False

    def _stall(self) -> None:
        """A step that ran nothing and refused nothing: allowed `stall_limit` times in a row (a step
        that ran something in between, which counts in `steps`, starts the count again)."""
        if self.steps != self.stalled_at:
            self.stalled_at = self.steps
            self.stalled = 0
        self.stalled += 1
        if self.stalled > self.stall_limit:
            raise SimulationStalled(
                engine=self.policy.engine, rule=self.rule.name, steps=self.stalled, clock_s=self.clock,
                running=self.n_running, decoding=self.n_dec, prefilling=len(self.prefilling), waiting=len(self.waiting),
                kv_used_tokens=self.kv_used, kv_capacity_tokens=self.capacity, workload=self.workload_text,
            )

    def step(self) -> None:
        """One engine iteration; the caller makes sure there is work (`busy`)."""
        pol = self.policy
        cost = self.cost
        mixed = pol.mixed_batches
        n_dec = self.n_dec
        spec = self.spec
        need = n_dec if spec is None else decode_growth(self)  # KV tokens this step's decodes add
        if mixed and n_dec and self.kv_used + need > self.capacity:
            self.rule.make_room(self)
            n_dec = self.n_dec
            need = n_dec if spec is None else decode_growth(self)
        static = pol.static
        chunked = pol.chunked_prefill
        budget = BIG_BUDGET if static else pol.max_num_batched_tokens
        waiting = self.waiting
        prefilling = self.prefilling
        # mixed batches carry the decodes first; otherwise (SGLang) a prefill batch runs when one
        # forms and decodes wait, and a decode batch runs when none does
        decode_now = mixed and n_dec > 0
        q = self.verify  # tokens each decode carries: 1, or the k drafts + 1 under speculation
        tokens = decode_tokens = n_dec * q if decode_now else 0
        budget -= tokens
        kv_read = self.depth_sum if decode_now else 0.0
        pairs = kv_read if q == 1 else kv_read * q + n_dec * q * (q - 1) * 0.5
        completing: list[Request] = []
        # continue prompts already admitted
        i = 0
        while i < len(prefilling) and budget > 0:
            req = prefilling[i]
            c = req.todo if req.todo <= budget else (budget if chunked else 0)
            if c == 0:
                break
            budget -= c
            tokens += c
            kv_read += req.done
            pairs += c * req.done + c * c * 0.5
            req.done += c
            req.todo -= c
            if req.todo == 0:
                completing.append(req)
                prefilling.pop(i)
            else:
                i += 1
        # admit new prompts (idle, or on a decode step the scheduler reads its queue: `admit_every`)
        if ((not static or self.n_running == 0) and (self.n_dec == 0 or self.k % self.admit_every == 0)
                and (not self.balance_timeout or self.balanced())):
            max_seqs = pol.max_num_seqs
            hit = pol.prefix_cache_hit_fraction
            frag = self.frag
            pcache = self.pcache
            # the recompute rules' `admits`, inlined (it runs every step): prompt + half a block,
            # above the watermark, once this step's decodes have their tokens
            room = self.admit_room
            grown = need if decode_now else 0
            if room is not None:
                room -= grown
            else:
                self.growing = grown  # KV this step's decodes take: admission leaves it free
            while waiting and budget > 0 and self.n_running < max_seqs:
                req = waiting[0]
                shared = req.content is not None and not req.cached
                if shared:  # the prefix cache decides its hit and what KV it shares (prefix_cache.py)
                    pcache.lookup(req)
                if room is not None:
                    if self.kv_used + req.prompt - req.held + frag > room:
                        break
                elif not self.admits(self, req):
                    break
                if req.cached:
                    todo = req.prompt - req.cached
                elif shared:
                    todo = req.prompt - req.hit
                else:
                    todo = req.prompt if not hit else max(1, int(req.prompt * (1.0 - hit)))
                if todo > budget and not chunked and tokens > decode_tokens:
                    break  # unchunked: a prompt over the budget runs as the step's only prefill
                waiting.popleft()
                if shared:
                    pcache.acquire(req)
                if shared or (hit and not req.cached):
                    self.prompt_admitted += req.prompt
                    self.hit_admitted += req.prompt - todo
                if req.admitted < 0:
                    req.admitted = self.clock
                    self.queue.add(self.clock - req.ready)
                self.kv_used += req.prompt - req.held + frag
                self.n_running += 1
                self.owed += req.output - req.generated
                if self.reserves:
                    req.booked = self.rule.reservation(self, req)
                    self.reserved += req.booked
                self.order.append(req)
                req.done = req.prompt - todo
                req.todo = todo
                c = todo if (todo <= budget or not chunked) else budget
                if c > budget:  # an unchunked prompt may overrun the budget alone
                    budget = c
                budget -= c
                tokens += c
                kv_read += req.done
                pairs += c * req.done + c * c * 0.5
                req.done += c
                req.todo -= c
                if req.todo == 0:
                    completing.append(req)
                else:
                    prefilling.append(req)
        if not mixed and tokens == 0 and n_dec:
            # no prefill batch formed: a decode batch, once the rule has made room for its tokens
            need = n_dec if spec is None else decode_growth(self)
            if self.kv_used + need > self.capacity:
                self.rule.make_room(self)
                n_dec = self.n_dec
                need = n_dec if spec is None else decode_growth(self)
            if n_dec:
                decode_now = True
                tokens = decode_tokens = n_dec * q
                kv_read = pairs = self.depth_sum
                if q > 1:
                    pairs = kv_read * q + n_dec * q * (q - 1) * 0.5
        if tokens == 0:
            if waiting and not self.n_running:
                # the rules refuse on arrival what an empty engine cannot admit; a safety net only
                waiting.popleft()
                self.refuse(UNSERVABLE)
                self.stalled = 0
                return
            self._stall()
            return
        # the step's time
        routed = cost.routed_bytes
        weights = cost.weight_fixed_bytes + cost.embedding_row_bytes * tokens
        if routed:
            weights += routed * (1.0 - (1.0 - cost.experts_k_over_e) ** tokens)
        # two rooflines, summed: the linear layers' GEMMs, then attention over the KV (cost.py)
        w_mem, kv_mem = cost.memory_s(weights, kv_read, tokens)
        matmul = attention = 0.0
        decoded = n_dec if decode_now else 0
        if cost.peak_flops:
            # GEMMs: decode tokens on the eta_c curve, prompt tokens on the prefill curve (cost.py)
            matmul = cost.matmul_flops_per_token * (
                decode_tokens * (tokens + cost.compute_half_tokens) / cost.compute_fraction_max
                + (tokens - decode_tokens) * (tokens + cost.prefill_half_tokens) / cost.prefill_fraction_max
                * (cost.prefill_gemm_scale(tokens) if cost.prefill_routed_share and decode_tokens < tokens else 1.0)
            ) / (tokens * cost.peak_flops)
            attention = cost.attention_flops_per_pair * pairs
            if cost.decode_attention_flops_per_pair and decoded:  # MLA: decode attends in its absorbed form
                attention += (cost.decode_attention_flops_per_pair - cost.attention_flops_per_pair) * self.depth_sum
            attention /= self.attention_peak
            if routed:  # MoE: grouped expert GEMMs pad each expert's tokens to whole tiles (cost.py)
                matmul += cost.expert_padding_s(tokens, decode_tokens)
        memory = (w_mem if w_mem >= matmul else 0.0) + (kv_mem if kv_mem >= attention else 0.0)
        roof = (w_mem if w_mem >= matmul else matmul) + (kv_mem if kv_mem >= attention else attention)
        if spec is not None:  # the drafter's forwards, before the verify pass (speculation.py)
            depth = self.depth_sum if decode_now else 0.0
            d_mem, d_s = draft_time_s(spec, decoded, depth, tokens - decode_tokens, kv_read - depth,
                                      pairs - depth * q - decoded * q * (q - 1) * 0.5)
            memory += d_mem
            roof += d_s
        if cost.moe_comm_fixed_s:  # EP all-to-all, added or hidden under two-batch overlap (cost.py)
            roof = cost.with_moe_comm(roof, tokens)
        compute = roof - memory
        # sampling, stop checks and detokenisation per token emitted (a decode under speculation emits `need / n_dec`)
        emitting = (decoded if spec is None or not decode_now else need) + len(completing)
        fixed = cost.overhead_s + cost.sequence_overhead_s * emitting
        if self.comm:  # comm_s is 0.0 without all-reduces or hops: skip the call
            fixed += cost.comm_s(tokens)
        dt = roof + fixed
        if decode_tokens < tokens and dt < cost.eager_prefill_s and tokens > cost.graphed_step_tokens:  # eager (cost.py)
            dt = cost.eager_prefill_s
            fixed = dt - roof
        if self.record is not None:
            firsts = sum(1 for req in completing if req.first < 0)
            self.record.append((tokens, kv_read, pairs, n_dec if decode_now else 0, len(completing), firsts))
        bound = "overhead" if fixed > roof else ("memory" if memory >= compute else "compute")
        self.bound_s[bound] += dt
        self.batch_time += self.n_running * dt
        self.kv_time += self.kv_used * dt
        self.clock += dt
        now = self.clock
        self.steps += 1
        self.busy_s += dt
        prefill_tokens = tokens - decode_tokens
        share = prefill_tokens / tokens
        self.prefill_s += dt * share
        self.decode_s += dt - dt * share
        if self.steps & 63 == 0:
            self.batch_trace.add(now, self.n_running)
            self.kv_trace.add(now, self.kv_used / self.capacity if self.capacity else 0.0)
        # decodes emit a token each (under speculation, `grow` tokens: speculation.emit)
        if decode_now and spec is not None:
            emit(self, need, dt, now)
        elif decode_now:
            self.k += 1
            k = self.k
            self.depth_sum += n_dec
            self.kv_used += n_dec
            self.tokens_out += n_dec
            if pol.scheduler_steps == 1 or k % pol.scheduler_steps == 0:
                self.itl.add(dt + self.pause_s, n_dec)  # tokens reach the client now (in a burst)
                self.pause_s = 0.0
            else:
                self.pause_s += dt
            bucket = self.buckets.pop(k, None)
            if bucket:
                for req in bucket:
                    if req.finish_k == k:  # the same as `end_decode(req, now)`, inlined: it runs every step
                        held = req.prompt + (k - req.join_k)
                        self.depth_sum -= held
                        self.free_kv(req, held, finished=True)
                        self.n_dec -= 1
                        self.n_running -= 1
                        self.owed -= k
                        req.finish_k = -1
                        self._finish(req, now)
        elif n_dec:
            self.pause_s += dt
        # prompts that finished prefill emit their first (or next) token
        for req in completing:
            req.generated += 1
            self.tokens_out += 1
            if req.first < 0:
                req.first = now
                self.ttft.add(now - req.arrival)
                self.tokens_in += req.prompt
            left = req.output - req.generated
            self.owed -= left + 1
            if left <= 0:
                self.free_kv(req, req.prompt, finished=True)
                self.n_running -= 1
                self._finish(req, now)
                continue
            req.join_k = self.k
            req.finish_k = self.k + left
            self.owed += req.finish_k
            self.n_dec += 1
            self.depth_sum += req.prompt
            bucket = self.buckets.get(req.finish_k)
            if bucket is None:
                self.buckets[req.finish_k] = [req]
            else:
                bucket.append(req)
        if self.pcache.idle_tokens > self.capacity - self.kv_used:  # cached idle KV that no longer fits
            self.pcache.trim(self.capacity - self.kv_used)
        if len(self.order) > 2 * self.n_running + 64:
            self.order = [r for r in self.order if r.finish_k >= 0 or r.todo > 0]

    def free_kv(self, req: Request, held: float, *, finished: bool) -> None:
        """Give back the `held` tokens of KV a request leaving the batch had (plus its fragment), less what
        it shares in the prefix cache (`PrefixCache.release`: kept, or idle until evicted). Every exit
        (finish after prefill, after decode, in a speculative pass, preemption) goes through here."""
        shared = self.pcache.release(req, finished=finished) if req.nsegs or req.slot >= 0 else 0
        self.kv_used -= held + self.frag - shared

    def end_decode(self, req: Request, now: float) -> None:
        """`req` has generated its whole output (at decode count `req.finish_k`): free its KV and finish it."""
        key = req.finish_k
        held = req.prompt + (key - req.join_k)
        self.depth_sum -= held
        self.free_kv(req, held, finished=True)
        self.n_dec -= 1
        self.n_running -= 1
        self.owed -= key
        req.finish_k = -1
        self._finish(req, now)

    def _finish(self, req: Request, now: float) -> None:
        self.completed += 1
        self.output_done += req.output
        if req.booked:
            self.reserved -= req.booked
            req.booked = 0.0
        self.last_finish = now
        e2e = now - req.arrival
        self.e2e.add(e2e)
        ttft = req.first - req.arrival
        tpot = (now - req.first) / (req.output - 1) if req.output > 1 else 0.0
        if req.output > 1:
            self.tpot.add(tpot)
        if ttft <= self.slo_ttft and tpot <= self.slo_tpot:
            self.good += 1
        if self.on_finish is not None:
            self.on_finish(now)
        if self.on_done is not None:
            self.on_done(req, now)
