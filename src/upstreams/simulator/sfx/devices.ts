/** Sound-effect recipes of devices: clicks, beeps, alarms, sirens, lasers, engines, bells. Each adds its layers to `ctx.out`. */
import { polyBlep } from "../music/dsp.ts";
import { hasAny, type Words } from "../music/words.ts";
import type { SfxKind } from "./kinds.ts";
import { bellStrike, events, noiseLayer, toneLayer, transient, wander, type SfxCtx } from "./layers.ts";

/** The recipe of each of these kinds: renders the kind's character into `ctx.out` (adding). */
export const DEVICES_RECIPES: Record<Extract<SfxKind, "click" | "beep" | "alarm" | "siren" | "laser" | "engine" | "bell">, (ctx: SfxCtx, w: Words) => void> = {
  click,
  beep,
  alarm,
  siren,
  laser,
  engine,
  bell,
};

function click(ctx: SfxCtx, w: Words): void {
  const { dur, vary } = ctx;
  const clock = hasAny(w, ["clock", "ticking", "tock"]);
  const typing = hasAny(w, ["typing", "keyboard", "keys"]);
  if (clock) {
    for (let t = 0.05, i = 0; t < dur; t += 0.5, i++) {
      transient(ctx, t, 0.6, 0, i % 2 === 0 ? 3200 : 2400, 0.004);
    }
  } else if (typing) {
    for (const t of events(ctx, vary(9, 0.3), 0.02)) {
      transient(ctx, t, vary(0.5, 0.4), 0, vary(2200, 0.3), 0.006);
    }
  } else {
    const gap = vary(dur < 1.5 ? dur / 2 : 0.45, 0.3);
    for (let t = 0.02; t < dur; t += gap) transient(ctx, t, 0.7, 0, vary(4000, 0.3), 0.003);
  }
}

function beep(ctx: SfxCtx, w: Words): void {
  const { dur, p, vary } = ctx;
  const f = vary(hasAny(w, ["low"]) ? 440 : 1000, 0.4);
  const on = vary(0.15, 0.3);
  const gap = vary(0.45, 0.4);
  for (let t = 0.02, i = 0; t < dur - 0.05; t += on + gap, i++) {
    const fi = hasAny(w, ["robot", "computer"]) ? f * (1 + 0.5 * Math.floor(p() * 4)) : f;
    toneLayer(ctx, t, on, 0.5, () => fi, (tt) => Math.min(1, tt / 0.005, (on - tt) / 0.01), 0.2);
  }
}

function alarm(ctx: SfxCtx, _w: Words): void {
  const { dur, vary } = ctx;
  const f1 = vary(880, 0.2);
  const f2 = f1 * vary(1.26, 0.1);
  const rate = vary(4, 0.3);
  toneLayer(
    ctx,
    0,
    dur,
    0.45,
    (t) => (Math.floor(t * rate) % 2 === 0 ? f1 : f2),
    () => 1,
    0.3,
  );
}

function siren(ctx: SfxCtx, w: Words): void {
  const { dur, vary } = ctx;
  const lo = vary(650, 0.2);
  const hi = lo * vary(2, 0.2);
  const rate = vary(hasAny(w, ["police", "yelp"]) ? 1.2 : 0.3, 0.3);
  const sweep = (t: number) => lo + (hi - lo) * (0.5 - 0.5 * Math.cos(2 * Math.PI * rate * t));
  toneLayer(ctx, 0, dur, 0.5, sweep, () => 1, 0.25);
}

function laser(ctx: SfxCtx, _w: Words): void {
  const { dur, vary } = ctx;
  const shot = vary(0.25, 0.3);
  const gap = vary(0.5, 0.4);
  const f0 = vary(3500, 0.3);
  for (let t = 0.01; t < dur - 0.05; t += shot + gap) {
    toneLayer(
      ctx,
      t,
      shot,
      0.45,
      (tt) => 150 + f0 * Math.exp(-tt * (12 / shot)),
      (tt) => Math.exp(-tt / (shot * 0.5)),
      0.4,
    );
  }
}

function engine(ctx: SfxCtx, w: Words): void {
  const { vary } = ctx;
  const f0 = vary(hasAny(w, ["hum", "fan", "generator"]) ? 60 : 45, 0.3);
  const rev = wander(ctx, 0.4);
  const { out, sr } = ctx;
  let ph = 0;
  let lpS = 0;
  for (let i = 0; i < out.length; i++) {
    const t = i / sr;
    const f = f0 * (0.85 + 0.4 * rev(t)) * (1 + 0.02 * Math.sin(2 * Math.PI * 7 * t));
    ph += f / sr;
    ph -= Math.floor(ph);
    const saw = 2 * ph - 1 - polyBlep(ph, f / sr);
    lpS += (saw - lpS) * 0.05;
    out[i] += lpS * 0.6;
  }
  noiseLayer(ctx, 0.2, () => 1, (t) => 400 + 300 * rev(t), 500);
}

function bell(ctx: SfxCtx, w: Words): void {
  const { dur, vary } = ctx;
  const gong = hasAny(w, ["gong"]);
  const f = vary(gong ? 110 : hasAny(w, ["church"]) ? 330 : 880, 0.3);
  const gap = vary(gong ? dur : 1.2, 0.3);
  for (let t = 0.01; t < dur - 0.05; t += gap) bellStrike(ctx, t, f, 0.6, gong ? 0.4 : 1.2);
}
