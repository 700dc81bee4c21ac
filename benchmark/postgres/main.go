// Command postgres measures reads of a conversation's whole history in
// turnlog and in a plain PostgreSQL event-store table holding the same
// messages, side by side in one run, as issue 16 asks: a table
// events(conversation, seq, step_id, body) with primary key
// (conversation, seq) and the same msgpack bodies, the same stream of
// 1,000,000 messages over 10,000 conversations, the same 100-event
// conversation spread over it, its events decoded in both. Warm: the median
// of 31 reads; cold: the first read after the server restarts (the
// operating system's page cache stays warm for both). run.sh installs and
// starts PostgreSQL and runs it; it is not part of CI.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/turnlog/turnlog/benchmark"
	"github.com/turnlog/turnlog/events"
)

func main() {
	var (
		dsn           = flag.String("dsn", "host=/tmp port=15432 user=postgres dbname=postgres", "PostgreSQL connection string")
		restart       = flag.String("restart", "", "shell command that restarts PostgreSQL, for the cold reads")
		messages      = flag.Int("messages", 1_000_000, "messages in the stream")
		conversations = flag.Int("conversations", 10_000, "conversations in the stream")
	)
	flag.Parse()
	if err := run(context.Background(), *dsn, *restart, *messages, *conversations); err != nil {
		fmt.Fprintln(os.Stderr, "postgres bench:", err)
		os.Exit(1)
	}
}

// figures are one run's results; the JSON keys are what BENCHMARKS.md
// quotes.
type figures struct {
	Messages         int     `json:"stream_messages"`
	Conversations    int     `json:"stream_conversations"`
	PostgresWarmMs   float64 `json:"postgres_history_ms_warm"`
	PostgresColdMs   float64 `json:"postgres_history_ms_cold"`
	TurnlogWarmMs    float64 `json:"history_ms_1m_warm"`
	TurnlogColdMs    float64 `json:"history_ms_1m_cold"`
	TurnlogUncached  float64 `json:"history_ms_1m_cold_uncached"`
	WarmRatio        float64 `json:"warm_turnlog_to_postgres"`
	ColdRatio        float64 `json:"cold_turnlog_to_postgres"`
	PostgresTableMiB float64 `json:"postgres_table_mib"`
}

func run(ctx context.Context, dsn, restart string, messages, conversations int) error {
	say := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL (%s): %w", dsn, err)
	}
	if err := load(ctx, conn, messages, conversations, say); err != nil {
		return err
	}
	f := figures{Messages: messages, Conversations: conversations}
	if err := conn.QueryRow(ctx, `SELECT pg_total_relation_size('events')::float8 / 1048576`).Scan(&f.PostgresTableMiB); err != nil {
		return err
	}

	say("postgres: warm history reads")
	var warm []float64
	for i := 0; i < 31; i++ {
		d, err := history(ctx, conn)
		if err != nil {
			return err
		}
		warm = append(warm, d)
	}
	f.PostgresWarmMs = median(warm)
	conn.Close(ctx)

	if restart != "" {
		say("postgres: history reads after a restart")
		var cold []float64
		for i := 0; i < 3; i++ {
			cmd := exec.CommandContext(ctx, "sh", "-c", restart)
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("restart PostgreSQL: %w", err)
			}
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				return err
			}
			d, err := history(ctx, conn)
			conn.Close(ctx)
			if err != nil {
				return err
			}
			cold = append(cold, d)
		}
		f.PostgresColdMs = median(cold)
	}

	say("turnlog: the same reads in the same stream")
	res, err := benchmark.RunBigLoads(ctx, benchmark.Config{BigMessages: messages, BigConversations: conversations, Progress: os.Stderr})
	if err != nil {
		return err
	}
	f.TurnlogWarmMs, f.TurnlogColdMs, f.TurnlogUncached = res.HistoryMs1mWarm, res.HistoryMs1mCold, res.HistoryMs1mColdUncached
	f.WarmRatio = f.TurnlogWarmMs / f.PostgresWarmMs
	if f.PostgresColdMs > 0 {
		f.ColdRatio = f.TurnlogColdMs / f.PostgresColdMs
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(f)
}

// load fills the events table with the big stream's messages, unless it
// already holds them all.
func load(ctx context.Context, conn *pgx.Conn, messages, conversations int, say func(string, ...any)) error {
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS events (
		conversation text NOT NULL, seq bigint NOT NULL, step_id text NOT NULL, body bytea NOT NULL,
		PRIMARY KEY (conversation, seq))`); err != nil {
		return err
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&n); err != nil {
		return err
	}
	if n == messages {
		say("postgres: reusing the %d rows of the events table", n)
		return nil
	}
	say("postgres: loading %d messages over %d conversations", messages, conversations)
	if _, err := conn.Exec(ctx, `TRUNCATE events`); err != nil {
		return err
	}
	rows := make([][]any, 0, 10_000)
	flush := func() error {
		_, err := conn.CopyFrom(ctx, pgx.Identifier{"events"}, []string{"conversation", "seq", "step_id", "body"}, pgx.CopyFromRows(rows))
		rows = rows[:0]
		return err
	}
	err := benchmark.EachBigStreamMessage(messages, conversations, func(m benchmark.BigStreamMessage) error {
		rows = append(rows, []any{m.Conversation, int64(m.Seq), m.StepID, m.Data})
		if len(rows) == cap(rows) {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	_, err = conn.Exec(ctx, `VACUUM ANALYZE events`)
	return err
}

// history reads the measured conversation's events, decoded, as turnlog's
// history read gives them, and returns the milliseconds it took.
func history(ctx context.Context, conn *pgx.Conn) (float64, error) {
	start := time.Now()
	rows, err := conn.Query(ctx, `SELECT seq, step_id, body FROM events WHERE conversation = $1 ORDER BY seq`, benchmark.MeasuredConversation)
	if err != nil {
		return 0, err
	}
	n := 0
	for rows.Next() {
		var seq int64
		var stepID string
		var body []byte
		if err := rows.Scan(&seq, &stepID, &body); err != nil {
			return 0, err
		}
		evs, err := events.DecodeOwned(body)
		if err != nil {
			return 0, err
		}
		n += len(evs)
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	took := time.Since(start)
	if n != 100 {
		return 0, fmt.Errorf("history of %s: %d events, want 100", benchmark.MeasuredConversation, n)
	}
	return float64(took.Microseconds()) / 1000, nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
