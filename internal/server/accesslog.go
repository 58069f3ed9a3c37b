package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/trainyard/trainyard/internal/audit"
)

// The access log is go-grpc-middleware's logging interceptor: one line
// when a call finishes, never its payloads, which carry secret values and
// tokens. By default (Config.AccessLogAll false) a successful call's line
// is DEBUG and a failed call's INFO or above.

// accessLogInterceptors are the gRPC servers' access-log interceptors.
func accessLogInterceptors(log *slog.Logger, all bool) (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	opts := []logging.Option{logging.WithLogOnEvents(logging.FinishCall), logging.WithFieldsFromContext(callFields)}
	if !all {
		opts = append(opts, logging.WithLevels(successAtDebug))
	}
	// A unary call's time and start are callFields' (the call may be
	// logged after the fact, below); a stream's are the library's, its
	// time as a number: the default field formats it with fmt on every
	// call, logged or not.
	unary := logging.UnaryServerInterceptor(slogAdapter(log), append(opts,
		logging.WithDurationField(func(time.Duration) logging.Fields { return nil }))...)
	stream := logging.StreamServerInterceptor(slogAdapter(log), append(opts,
		logging.WithDurationField(func(d time.Duration) logging.Fields { return logging.Fields{"grpc.time_ms", millis(d)} }))...)
	return lazyAccessLog(unary, log, all), stream
}

// lazyAccessLog runs logged, the library's unary interceptor, around
// every call whose line may be written: all of them with all, or while
// DEBUG is enabled. Otherwise only a failed call's line can be, and the
// call runs first: the library builds a call's fields before it knows
// the outcome, which for a successful call nobody logs was 7 % of serve's
// CPU and 9 % of its allocations per submit at 32 clients (issue 47). A
// failed call then goes through logged with its outcome, and its start
// and time from when it began (callFields).
func lazyAccessLog(logged grpc.UnaryServerInterceptor, log *slog.Logger, all bool) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		if all || log.Enabled(ctx, slog.LevelDebug) {
			return logged(context.WithValue(ctx, callStartKey{}, start), req, info, handler)
		}
		resp, err := handler(ctx, req)
		if err == nil {
			return resp, nil
		}
		return logged(context.WithValue(ctx, callStartKey{}, start), req, info, func(context.Context, any) (any, error) {
			return resp, err
		})
	}
}

// callStartKey holds when a unary call began (lazyAccessLog).
type callStartKey struct{}

// callFields are the log fields of a call's audit.Request and, for a
// unary call, its start and time so far. The library reads them when the
// call starts and again when it finishes, the latter winning.
func callFields(ctx context.Context) logging.Fields {
	var f logging.Fields
	if r, ok := audit.RequestFrom(ctx); ok {
		f = logging.Fields{"request_id", r.ID, "client", r.Address}
	}
	if start, ok := ctx.Value(callStartKey{}).(time.Time); ok {
		f = append(f, "grpc.start_time", start.Format(time.RFC3339), "grpc.time_ms", millis(time.Since(start)))
	}
	return f
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// successAtDebug is the access log's level for a call's code when not
// every call is logged at INFO (Config.AccessLogAll).
func successAtDebug(c codes.Code) logging.Level {
	if c == codes.OK {
		return logging.LevelDebug
	}
	return logging.DefaultServerCodeToLevel(c)
}

func slogAdapter(l *slog.Logger) logging.Logger {
	return logging.LoggerFunc(func(ctx context.Context, lvl logging.Level, msg string, fields ...any) {
		l.Log(ctx, slog.Level(lvl), msg, fields...)
	})
}
